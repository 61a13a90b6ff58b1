// Package fieldmanager keeps the managedFields of every served object and
// merges server-side apply requests, with apimachinery's field manager over
// the OpenAPI schemas the server publishes: who owns which field, by which
// operation, and what an apply conflicts with.
package fieldmanager

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Kind is one served kind and what the field manager needs of it.
type Kind struct {
	GVK schema.GroupVersionKind
	// New returns an empty object of the kind.
	New func() runtime.Object
	// Default sets the kind's defaults, as a create or update does.
	Default func(runtime.Object)
	// HasStatus says the kind has a status subresource: the main resource
	// then owns no status field and the status subresource only status.
	HasStatus bool
	// HasScale says the kind has a scale subresource, whose writes own
	// the kind's spec.replicas.
	HasScale bool
}

// Endpoint is the part of an object a write goes through; each has a
// manager of its own, as upstream's (a manager's entry names its
// subresource).
type Endpoint string

// The endpoints that keep managedFields.
const (
	Main     Endpoint = ""
	Status   Endpoint = "status"
	Finalize Endpoint = "finalize"
	// Scale's entries are the parent's, as upstream records them: a
	// manager of the scale subresource owns spec.replicas.
	Scale Endpoint = "scale"
)

// Managers holds a field manager per kind and endpoint, built on first use
// from the schemas: building them parses every schema, which a server that
// only starts should not wait for.
type Managers struct {
	models func() (map[string]*spec.Schema, error)
	kinds  []Kind

	once sync.Once
	err  error
	by   map[key]*managedfields.FieldManager
}

type key struct {
	gvk schema.GroupVersionKind
	ep  Endpoint
}

// New returns the managers of kinds, whose schemas models returns.
func New(models func() (map[string]*spec.Schema, error), kinds []Kind) *Managers {
	return &Managers{models: models, kinds: kinds}
}

// Warm builds the managers now, so that the first write does not wait.
func (m *Managers) Warm() error {
	m.once.Do(m.build)
	return m.err
}

func (m *Managers) build() {
	models, err := m.models()
	if err != nil {
		m.err = err
		return
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		m.err = fmt.Errorf("field manager type converter: %w", err)
		return
	}
	kinds := make(map[schema.GroupVersionKind]Kind, len(m.kinds))
	for _, k := range m.kinds {
		kinds[k.GVK] = k
	}
	conv := converter{kinds: kinds}
	m.by = make(map[key]*managedfields.FieldManager, 2*len(m.kinds))
	for _, k := range m.kinds {
		eps := []Endpoint{Main}
		if k.HasStatus {
			eps = append(eps, Status)
		}
		if k.GVK.Group == "" && k.GVK.Kind == "Namespace" {
			eps = append(eps, Finalize)
		}
		if k.HasScale {
			eps = append(eps, Scale)
		}
		for _, ep := range eps {
			fm, err := managedfields.NewDefaultFieldManager(tc, conv, conv, conv, k.GVK, k.GVK.GroupVersion(), string(ep), resetFields(k, ep))
			if err != nil {
				m.err = fmt.Errorf("field manager of %s: %w", k.GVK, err)
				return
			}
			m.by[key{k.GVK, ep}] = fm
		}
	}
}

// resetFields are the fields a write through ep may not take: those of the
// other endpoint, as upstream's strategies reset them.
func resetFields(k Kind, ep Endpoint) map[fieldpath.APIVersion]fieldpath.Filter {
	var set *fieldpath.Set
	switch {
	case ep == Main && k.HasStatus:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case ep == Status:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	default:
		return nil
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(k.GVK.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set),
	}
}

func (m *Managers) get(gvk schema.GroupVersionKind, ep Endpoint) (*managedfields.FieldManager, error) {
	m.once.Do(m.build)
	if m.err != nil {
		return nil, m.err
	}
	fm, ok := m.by[key{gvk, ep}]
	if !ok {
		return nil, fmt.Errorf("no field manager for %s %q", gvk, ep)
	}
	return fm, nil
}

// Update records manager's changes from live to obj (an Update operation)
// in obj's managedFields and returns obj. A create passes an empty live
// object. managedFields obj carries that cannot be decoded are replaced
// by live's, as upstream does; nothing else can fail: the bookkeeping
// never refuses a write, it drops the managedFields it cannot keep.
func (m *Managers) Update(gvk schema.GroupVersionKind, ep Endpoint, live, obj runtime.Object, manager string) runtime.Object {
	fm, err := m.get(gvk, ep)
	if err != nil {
		// As the field manager does when it fails: no managedFields rather
		// than ones nobody checked.
		if acc, err := meta.Accessor(obj); err == nil {
			acc.SetManagedFields(nil)
		}
		return obj
	}
	setKind(live, gvk)
	setKind(obj, gvk)
	return fm.UpdateNoErrors(live, obj, manager)
}

// Apply merges applied (a decoded apply body) into live as manager's
// configuration and returns the result, or upstream's errors: 409 with the
// conflicting fields and their managers unless force, 400 for managedFields
// in the body.
func (m *Managers) Apply(gvk schema.GroupVersionKind, ep Endpoint, live runtime.Object, applied *unstructured.Unstructured, manager string, force bool) (runtime.Object, error) {
	fm, err := m.get(gvk, ep)
	if err != nil {
		return nil, err
	}
	setKind(live, gvk)
	return fm.Apply(live, applied, manager, force)
}

// setKind stamps apiVersion and kind, which the type converter reads and
// objects decoded from storage lack.
func setKind(obj runtime.Object, gvk schema.GroupVersionKind) {
	if obj.GetObjectKind().GroupVersionKind() != gvk {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

// ManagerOrUserAgent is the manager of a write that names none: the
// client's user agent up to its first "/" (kubectl's "kubectl-client-side-apply",
// client-go's program name), printable characters only, cut to the longest
// manager name allowed, as upstream derives it.
func ManagerOrUserAgent(manager, userAgent string) string {
	if manager != "" {
		return manager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var buf bytes.Buffer
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// converter serves the field manager's conversions. kube-lite keeps every
// kind in its one served version, so converting is at most turning an
// apply's unstructured result into the kind's type, and defaulting is the
// kind's own.
type converter struct {
	kinds map[schema.GroupVersionKind]Kind
}

func (c converter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	k, ok := c.kinds[gvk]
	if !ok {
		return nil, fmt.Errorf("unserved kind %s", gvk)
	}
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); !ok || target != gvk {
		return nil, fmt.Errorf("cannot convert %s to %v", gvk, gv)
	}
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		// Already the kind's type in its version: the field manager only
		// reads what it asked to convert.
		return in, nil
	}
	out := k.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}

func (c converter) Convert(in, out, context interface{}) error {
	return fmt.Errorf("unsupported conversion of %T to %T", in, out)
}

func (c converter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", fmt.Errorf("unsupported field label conversion of %s", gvk)
}

func (c converter) Default(obj runtime.Object) {
	if k, ok := c.kinds[obj.GetObjectKind().GroupVersionKind()]; ok && k.Default != nil {
		k.Default(obj)
	}
}

func (c converter) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	k, ok := c.kinds[gvk]
	if !ok {
		return nil, fmt.Errorf("unserved kind %s", gvk)
	}
	obj := k.New()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}
