package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-lite/kube-lite/test/integration/framework"
)

func TestConfigMapCRUD(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	cms := s.Client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if cm.UID == "" || cm.ResourceVersion == "" || cm.CreationTimestamp.IsZero() {
		t.Fatalf("server-set fields missing: %+v", cm.ObjectMeta)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("get: %v %+v", err, got)
	}
	stale := got.DeepCopy()
	got.Data["k"] = "w"
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	stale.Data["k"] = "x"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: want Conflict, got %v", err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %d", err, len(list.Items))
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: want NotFound, got %v", err)
	}
}

// A patch with unknown or duplicate fields under fieldValidation=Strict is
// upstream's 422 on the field "patch" naming every offending field; Warn
// answers with a warning per field and applies the patch.
func TestPatchStrictFieldValidationAsUpstream(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	cms := s.Client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	strict := metav1.PatchOptions{FieldValidation: metav1.FieldValidationStrict}
	cases := []struct {
		name  string
		pt    types.PatchType
		patch string
		value string // the start of the cause's Invalid value
		want  string
	}{
		{"merge unknown", types.MergePatchType, `{"data":{"k":"v"},"foo":1}`, `Invalid value: "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v\"},\"foo\":1,`,
			`strict decoding error: unknown field "foo"`},
		{"merge duplicate", types.MergePatchType, `{"data":{"k":"v"},"data":{"k":"w"}}`, `Invalid value: "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"w\"}`,
			`strict decoding error: duplicate field "data"`},
		{"strategic duplicate and unknown", types.StrategicMergePatchType, `{"data":{"k":"v"},"data":{"k":"w"},"foo":1}`, `Invalid value: "map[data:map[k:w] foo:1]"`,
			`strict decoding error: duplicate field "data", unknown field "foo"`},
		{"json patch duplicate and unknown", types.JSONPatchType, `[{"op":"add","path":"/foo","value":1,"value":2}]`, `Invalid value: "{\"apiVersion\":\"v1\",`,
			`strict decoding error: json patch duplicate field "[0].value", unknown field "foo"`},
		{"strategic wrong type", types.StrategicMergePatchType, `{"data":{"k":1}}`, `Invalid value: "map[data:map[k:1]]"`,
			`cannot convert int64 to string`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cms.Patch(ctx, "a", tc.pt, []byte(tc.patch), strict)
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusUnprocessableEntity || se.ErrStatus.Reason != metav1.StatusReasonInvalid ||
				se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) != 1 {
				t.Fatalf("got %#v, want a 422 Invalid with one cause", err)
			}
			c := se.ErrStatus.Details.Causes[0]
			if c.Field != "patch" || c.Type != metav1.CauseTypeFieldValueInvalid || !strings.HasPrefix(c.Message, tc.value) || !strings.HasSuffix(c.Message, tc.want) {
				t.Errorf("cause %+v, want field patch, FieldValueInvalid, %s...: %s", c, tc.value, tc.want)
			}
			if !strings.HasPrefix(se.ErrStatus.Message, ` "" is invalid: patch: `) {
				t.Errorf("message %q, want upstream's ` \"\" is invalid: patch: ...`", se.ErrStatus.Message)
			}
		})
	}
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || len(got.Data) != 0 {
		t.Fatalf("after refused patches: %v, data %v (want none applied)", err, got.Data)
	}

	warned := &warnings{}
	cfg := rest.CopyConfig(s.Config)
	cfg.WarningHandler = warned
	warn := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default")
	got, err = warn.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"v"},"data":{"k":"w"},"foo":1}`),
		metav1.PatchOptions{FieldValidation: metav1.FieldValidationWarn})
	if err != nil || got.Data["k"] != "w" {
		t.Fatalf("Warn patch: %v, data %v", err, got.Data)
	}
	if want := []string{`duplicate field "data"`, `unknown field "foo"`}; !slices.Equal(warned.got, want) {
		t.Errorf("warnings %q, want %q", warned.got, want)
	}
}

type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

// Pod log options are checked as upstream's, before the pod is looked up:
// a value that is not a number is a 400 in the parser's words, one out of
// range a 422 on PodLogOptions.
func TestPodLogOptionsAsUpstream(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := ctxT(t)
	if _, err := s.Client.CoreV1().Pods("default").Create(ctx, testPod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod, param, value string
		code              int32
		want              string
	}{
		{"missing", "tailLines", "x", http.StatusBadRequest, `strconv.ParseInt: parsing "x": invalid syntax`},
		{"web", "sinceTime", "yesterday", http.StatusBadRequest, `parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{"web", "tailLines", "-1", http.StatusUnprocessableEntity, `PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`},
		{"web", "limitBytes", "0", http.StatusUnprocessableEntity, `PodLogOptions "web" is invalid: limitBytes: Invalid value: 0: must be greater than 0`},
	} {
		err := s.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods", tc.pod, "log").Param(tc.param, tc.value).Do(ctx).Error()
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Code != tc.code || se.ErrStatus.Message != tc.want {
			t.Errorf("log of %s with %s=%s: %v, want %d %s", tc.pod, tc.param, tc.value, err, tc.code, tc.want)
		}
	}
}
