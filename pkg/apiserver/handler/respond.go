package handler

import (
	"bytes"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// respond writes obj (an object or a list of st's kind) in the negotiated form.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, st *Store, code int, obj runtime.Object) {
	mc, err := negotiated(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkPartialShape(mc, obj); err != nil {
		writeError(w, r, err)
		return
	}
	out, err := h.transform(r, st, mc, obj)
	if err != nil {
		writeError(w, r, err)
		return
	}
	h.writeEncoded(w, r, code, mc, out)
}

// writeEncoded writes obj encoded in the form mc with its Content-Type.
func (h *Handler) writeEncoded(w http.ResponseWriter, r *http.Request, code int, mc mediaChoice, out runtime.Object) {
	var buf bytes.Buffer
	if err := h.encode(&buf, mc, out); err != nil {
		writeError(w, r, err)
		return
	}
	switch {
	case mc.proto:
		w.Header().Set("Content-Type", protobufType)
	case mc.yaml:
		w.Header().Set("Content-Type", "application/yaml")
	default:
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// checkPartialShape refuses, as upstream does with 406, PartialObjectMetadata
// for a list and PartialObjectMetadataList for a single object: a client
// decoding the answer as the kind it asked for would misread it.
func checkPartialShape(mc mediaChoice, obj runtime.Object) error {
	if mc.kind != outputPartialMetadata {
		return nil
	}
	if _, ok := obj.(*metav1.Status); ok {
		return nil
	}
	isList := meta.IsListType(obj)
	switch {
	case mc.partialAs == "PartialObjectMetadata" && isList:
		return failure(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("you requested PartialObjectMetadata, but the requested object is a list (%T)", obj))
	case mc.partialAs == "PartialObjectMetadataList" && !isList:
		return failure(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (%T)", obj))
	}
	return nil
}

func (h *Handler) encode(buf *bytes.Buffer, mc mediaChoice, obj runtime.Object) error {
	if mc.proto {
		return h.proto.Encode(obj, buf)
	}
	if mc.yaml {
		return h.yamlEnc.Encode(obj, buf)
	}
	if mc.pretty {
		return h.pretty.Encode(obj, buf)
	}
	return h.json.Encode(obj, buf)
}

// transform turns obj into what the client asked for: the object itself
// with its kind set, a Table, or PartialObjectMetadata.
func (h *Handler) transform(r *http.Request, st *Store, mc mediaChoice, obj runtime.Object) (runtime.Object, error) {
	switch mc.kind {
	case outputTable:
		return h.toTable(r, st, mc, obj)
	case outputPartialMetadata:
		return toPartial(mc, obj)
	}
	if meta.IsListType(obj) {
		setKind(obj, st.GroupVersion.WithKind(st.Kind+"List"))
	} else if _, ok := obj.(*metav1.Status); !ok {
		setKind(obj, st.GroupVersionKind())
	}
	return obj, nil
}

var defaultColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
	{Name: "Created At", Type: "date", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
}

func (h *Handler) toTable(r *http.Request, st *Store, mc mediaChoice, obj runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/" + mc.tableVers, Kind: "Table"}}
	if st.Table != nil {
		t.ColumnDefinitions = st.Table.Columns()
	} else {
		t.ColumnDefinitions = defaultColumns
	}
	include := r.URL.Query().Get("includeObject")
	if include == "" {
		include = "Metadata"
	}
	var items []runtime.Object
	if meta.IsListType(obj) {
		list, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, fmt.Errorf("list metadata: %w", err)
		}
		t.ResourceVersion, t.Continue, t.RemainingItemCount = list.GetResourceVersion(), list.GetContinue(), list.GetRemainingItemCount()
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("list items: %w", err)
		}
	} else {
		items = []runtime.Object{obj}
		if m, err := meta.Accessor(obj); err == nil {
			t.ResourceVersion = m.GetResourceVersion()
		}
	}
	t.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		var cells []interface{}
		var err error
		if st.Table != nil {
			cells, err = st.Table.Cells(item)
			if err != nil {
				return nil, fmt.Errorf("table row: %w", err)
			}
		} else {
			m, _ := meta.Accessor(item)
			cells = []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format("2006-01-02T15:04:05Z")}
		}
		row := metav1.TableRow{Cells: cells}
		switch include {
		case "Object":
			setKind(item, st.GroupVersionKind())
			row.Object.Object = item
		case "Metadata":
			p, err := partialOf(item, "meta.k8s.io/"+mc.tableVers)
			if err != nil {
				return nil, err
			}
			row.Object.Object = p
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func partialOf(obj runtime.Object, apiVersion string) (*metav1.PartialObjectMetadata, error) {
	acc, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("object %T has no ObjectMeta", obj)
	}
	om, ok := acc.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil, fmt.Errorf("unexpected metadata type %T", acc.GetObjectMeta())
	}
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "PartialObjectMetadata"}, ObjectMeta: *om}, nil
}

func toPartial(mc mediaChoice, obj runtime.Object) (runtime.Object, error) {
	apiVersion := "meta.k8s.io/" + mc.tableVers
	if !meta.IsListType(obj) {
		return partialOf(obj, apiVersion)
	}
	list, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, fmt.Errorf("list metadata: %w", err)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, fmt.Errorf("list items: %w", err)
	}
	out := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: list.GetResourceVersion(), Continue: list.GetContinue(), RemainingItemCount: list.GetRemainingItemCount()},
		Items:    make([]metav1.PartialObjectMetadata, 0, len(items)),
	}
	for _, item := range items {
		// Items carry their kind, as upstream's.
		p, err := partialOf(item, apiVersion)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *p)
	}
	return out, nil
}
