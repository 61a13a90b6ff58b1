// Package get holds `get`: server-side Tables for people, objects for
// machines (-o yaml|json|name|jsonpath|custom-columns), and -w.
package get

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/liggitt/tabwriter"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"
	kget "k8s.io/kubectl/pkg/cmd/get"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/rawhttp"
)

// tableAccept asks for server-side printing, falling back to objects for
// servers (or resources) without Tables.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// Options are get's flags.
type Options struct {
	Output        string
	LabelSelector string
	FieldSelector string
	AllNamespaces bool
	Watch         bool
	WatchOnly     bool
	// WatchEvents prints each change as its event: an EVENT column, or
	// the object wrapped in {type, object}.
	WatchEvents bool
	ShowLabels  bool
	// AllowMissingKeys lets -o jsonpath and go-template print nothing for
	// a field the object lacks instead of failing.
	AllowMissingKeys bool
	// ShowKind names rows kind/name even for a single type.
	ShowKind     bool
	LabelColumns []string
	SortBy       string
	NoHeaders    bool
	// IgnoreNotFound drops NotFound errors of named objects.
	IgnoreNotFound bool
	Filenames      resource.FilenameOptions
	// Raw is a URI to GET from the server and print as it comes.
	Raw string
	// Template is --template, the template of -o go-template|jsonpath.
	Template  string
	ChunkSize int64
	// ServerPrint asks the server for its Table; without it, only
	// names and ages are shown.
	ServerPrint bool
	// ShowManagedFields keeps metadata.managedFields in JSON and YAML
	// output, which hides them otherwise, as kubectl does.
	ShowManagedFields bool
	// Subresource gets each named object's subresource (status, scale)
	// in place of the object.
	Subresource string

	streams genericiooptions.IOStreams
}

// NewCmd returns `get`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "get [(-o|--output=)FORMAT] (TYPE[.VERSION][.GROUP] [NAME | -l label] | TYPE[.VERSION][.GROUP]/NAME ...)",
		Short: "Display one or many resources",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.Run(cmd.Context(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Output, "output", "o", "", "Output format: wide|yaml|json|name|jsonpath=...|custom-columns=...|go-template=...")
	fl.StringVarP(&o.LabelSelector, "selector", "l", "", "Label selector, e.g. -l key1=value1,key2=value2")
	fl.StringVar(&o.FieldSelector, "field-selector", "", "Field selector, e.g. --field-selector status.phase=Running")
	fl.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List across all namespaces")
	fl.BoolVarP(&o.Watch, "watch", "w", false, "After listing, watch for changes")
	fl.BoolVar(&o.WatchOnly, "watch-only", false, "Watch for changes without listing first")
	fl.BoolVar(&o.WatchEvents, "output-watch-events", false, "Output watch event objects when --watch or --watch-only is used. Existing objects are output as initial ADDED events.")
	fl.BoolVar(&o.ShowLabels, "show-labels", false, "Show all labels as the last column")
	fl.BoolVar(&o.AllowMissingKeys, "allow-missing-template-keys", true, "If true, ignore any errors in templates when a field or map key is missing in the template. Only applies to golang and jsonpath output formats.")
	fl.BoolVar(&o.ShowKind, "show-kind", false, "If present, list the resource type for the requested object(s).")
	fl.StringSliceVarP(&o.LabelColumns, "label-columns", "L", nil, "Labels to show as columns, one column each (-L key1,key2 or -L key1 -L key2)")
	fl.BoolVar(&o.NoHeaders, "no-headers", false, "Omit table headers")
	fl.BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "Say nothing about named objects that do not exist")
	fl.StringVar(&o.SortBy, "sort-by", "", "Sort lists by a field given as a JSONPath ('{.metadata.name}' or .metadata.creationTimestamp); the field must hold a string, a number or a time")
	fl.StringSliceVarP(&o.Filenames.Filenames, "filename", "f", nil, "Files identifying the resources to get")
	fl.BoolVarP(&o.Filenames.Recursive, "recursive", "R", false, "Process the directory used in -f recursively")
	fl.StringVar(&o.Raw, "raw", "", "Raw URI to request from the server.  Uses the transport specified by the kubeconfig file.")
	fl.StringVarP(&o.Filenames.Kustomize, "kustomize", "k", "", "Process the kustomization directory. This flag can't be used together with -f or -R.")
	fl.StringVar(&o.Template, "template", "", "Template string or path to template file to use when -o=go-template, -o=go-template-file. The template format is golang templates [http://golang.org/pkg/text/template/#pkg-overview].")
	fl.Int64Var(&o.ChunkSize, "chunk-size", 500, "Return large lists in chunks rather than all at once. Pass 0 to disable.")
	fl.BoolVar(&o.ServerPrint, "server-print", true, "If true, have the server return the appropriate table output. Supports extension APIs and CRDs.")
	fl.BoolVar(&o.ShowManagedFields, "show-managed-fields", false, "If true, keep the managedFields when printing objects in JSON or YAML format.")
	cmdutil.AddSubresourceFlags(cmd, &o.Subresource, "If specified, gets the subresource of the requested object.")
	return cmd
}

func (o *Options) human() bool {
	return o.Output == "" || o.Output == "wide"
}

// Run lists or gets the resources named by args.
func (o *Options) Run(ctx context.Context, f cmdutil.Factory, args []string) error {
	if o.Raw != "" {
		return o.raw(f, args)
	}
	if len(args) == 0 && cmdutil.IsFilenameSliceEmpty(o.Filenames.Filenames, o.Filenames.Kustomize) {
		return fmt.Errorf("you must specify the type of resource to get. Use \"kubectl-lite api-resources\" for a complete list of supported resources")
	}
	if o.Template != "" && o.Output == "" {
		// As kubectl: a template alone means -o go-template.
		o.Output = "go-template"
	}
	if o.ShowLabels && !o.human() {
		return fmt.Errorf("--show-labels option cannot be used with %s printer", o.Output)
	}
	if o.WatchEvents && !o.Watch && !o.WatchOnly {
		return fmt.Errorf("--output-watch-events option can only be used with --watch or --watch-only")
	}
	objPrinter, err := o.objectPrinter()
	if err != nil {
		return err
	}
	if o.SortBy != "" && (o.Watch || o.WatchOnly) {
		fmt.Fprintln(o.streams.ErrOut, "warning: --watch requested, --sort-by will be ignored for watch events received")
	}
	if o.SortBy != "" {
		if o.SortBy, err = kget.RelaxedJSONPathExpression(o.SortBy); err != nil {
			return fmt.Errorf("--sort-by: %w", err)
		}
	}
	ns, enforce, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	b := f.NewBuilder().
		Unstructured().
		NamespaceParam(ns).DefaultNamespace().AllNamespaces(o.AllNamespaces).
		FilenameParam(enforce, &o.Filenames).
		LabelSelectorParam(o.LabelSelector).
		FieldSelectorParam(o.FieldSelector).
		ResourceTypeOrNameArgs(true, args...).
		ContinueOnError().
		RequestChunksOf(o.ChunkSize).
		Latest()
	if o.Watch || o.WatchOnly {
		// One watch request follows one resource: several types are
		// refused before anything is listed, as kubectl does.
		b = b.SingleResourceType()
	} else {
		// A watch starts from the collection's resourceVersion, so it
		// needs the list itself, even an empty one. As kubectl, a watch
		// follows the object itself, never --subresource.
		b = b.Flatten().Subresource(o.Subresource)
	}
	if o.human() && o.ServerPrint {
		b = b.TransformRequests(func(req *rest.Request) {
			req.SetHeader("Accept", tableAccept)
			if o.SortBy != "" {
				// Sorting reads the field from each row's whole object.
				req.Param("includeObject", "Object")
			}
		})
	}
	r := b.Do()
	if o.IgnoreNotFound {
		r.IgnoreErrors(apierrors.IsNotFound)
	}
	if o.Watch || o.WatchOnly {
		return o.watch(ctx, f, r, objPrinter)
	}
	// What the arguments themselves get wrong (an unknown type) is
	// reported alone, as kubectl does, before anything is printed.
	if err := r.Err(); err != nil {
		return err
	}
	singleItemImplied := false
	r.IntoSingleItemImplied(&singleItemImplied)
	infos, err := r.Infos()
	if o.human() {
		printed, perr := o.printTables(infos)
		if perr != nil {
			return perr
		}
		if !printed && err == nil && !o.IgnoreNotFound {
			o.noResources(ns)
		}
		// As kubectl, the errors are listed one a line, without
		// "error: ", even when there is only one.
		return utilerrors.NewAggregate([]error{err})
	}
	// One file or one name (even a file of several documents) is printed
	// whole or not at all, as with kubectl; of several, what was found is
	// printed, an empty List if nothing was, and the errors after it.
	if err != nil && (singleItemImplied || len(infos) == 0 && o.IgnoreNotFound) {
		return err
	}
	if len(infos) == 0 && o.IgnoreNotFound {
		return nil
	}
	var obj runtime.Object
	if len(infos) == 1 && singleItemImplied {
		obj = infos[0].Object
	} else {
		list := &unstructured.UnstructuredList{Object: map[string]interface{}{"kind": "List", "apiVersion": "v1", "metadata": map[string]interface{}{"resourceVersion": ""}}}
		var objs []runtime.Object
		for _, info := range infos {
			if u, ok := info.Object.(*unstructured.Unstructured); ok {
				objs = append(objs, u)
			}
		}
		if o.SortBy != "" && len(objs) > 1 {
			if _, serr := kget.SortObjects(unstructured.UnstructuredJSONScheme, objs, o.SortBy); serr != nil {
				return serr
			}
		}
		for _, u := range objs {
			list.Items = append(list.Items, *u.(*unstructured.Unstructured))
		}
		obj = list
	}
	if perr := objPrinter.PrintObj(obj, o.streams.Out); perr != nil {
		return perr
	}
	return err
}

// raw prints what the server answers to a GET of --raw, refusing what
// kubectl refuses alongside it.
func (o *Options) raw(f cmdutil.Factory, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("arguments may not be passed when --raw is specified")
	}
	if o.Watch || o.WatchOnly || o.LabelSelector != "" {
		return fmt.Errorf("--raw may not be specified with other flags that filter the server request or alter the output")
	}
	if o.Output != "" {
		return fmt.Errorf("--raw and --output are mutually exclusive")
	}
	if _, err := url.ParseRequestURI(o.Raw); err != nil {
		return fmt.Errorf("--raw must be a valid URL path: %w", err)
	}
	client, err := f.RESTClient()
	if err != nil {
		return err
	}
	return rawhttp.RawGet(client, o.streams, o.Raw)
}

func (o *Options) noResources(ns string) {
	if o.AllNamespaces {
		fmt.Fprintln(o.streams.ErrOut, "No resources found")
		return
	}
	fmt.Fprintf(o.streams.ErrOut, "No resources found in %s namespace.\n", ns)
}

// objectPrinter is the printer for non-table output; nil for tables.
func (o *Options) objectPrinter() (printers.ResourcePrinter, error) {
	if o.human() {
		return nil, nil
	}
	if o.Output == "custom-columns" || o.Output == "custom-columns-file" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	if file, ok := strings.CutPrefix(o.Output, "custom-columns-file="); ok {
		return NewCustomColumnsPrinterFromFile(file)
	}
	if spec, ok := strings.CutPrefix(o.Output, "custom-columns="); ok {
		return NewCustomColumnsPrinter(spec, o.NoHeaders)
	}
	pf := genericclioptions.NewPrintFlags("")
	pf.OutputFormat = &o.Output
	pf.JSONYamlPrintFlags.ShowManagedFields = o.ShowManagedFields
	// The go-template and jsonpath flags share this one argument.
	*pf.TemplatePrinterFlags.TemplateArgument = o.Template
	*pf.TemplatePrinterFlags.AllowMissingKeys = o.AllowMissingKeys
	// Else a template given next to -o jsonpath is read as a go-template.
	pf.OutputFlagSpecified = func() bool { return o.Output != "" }
	p, err := pf.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		formats := append(pf.AllowedFormats(), "custom-columns", "custom-columns-file", "wide")
		sort.Strings(formats)
		return nil, fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", o.Output, strings.Join(formats, ","))
	}
	// Other errors say what is wrong with a template the user wrote.
	return p, err
}

// printTables prints each resource type's Table; several types are
// separated by a blank line and their names carry the type. Objects of one
// type named one by one share that type's table, header and column widths.
func (o *Options) printTables(infos []*resource.Info) (bool, error) {
	kinds := map[schema.GroupKind]bool{}
	for _, info := range infos {
		kinds[info.Mapping.GroupVersionKind.GroupKind()] = true
	}
	printed := false
	w := printers.GetNewTabWriter(o.streams.Out)
	defer w.Flush()
	var (
		p        printers.ResourcePrinter
		lastKind schema.GroupKind
	)
	for _, info := range infos {
		table, err := toTable(info)
		if err != nil {
			return printed, err
		}
		if len(table.Rows) == 0 {
			continue
		}
		if o.SortBy != "" {
			sorter, err := kget.NewTableSorter(table, o.SortBy)
			if err != nil {
				return printed, err
			}
			_ = sorter.Sort()
		}
		kind := info.Mapping.GroupVersionKind.GroupKind()
		if p == nil || kind != lastKind {
			if printed {
				// Each table on its own column widths: the writer
				// remembers widths across flushes (for -w), which would
				// lay a narrow table out on the widths of the one before.
				w.Flush()
				w.SetRememberedWidths(nil)
				fmt.Fprintln(o.streams.Out)
			}
			// One printer per type: it prints the header once for
			// rows with the same columns.
			p = o.tablePrinter(info.Mapping, len(kinds) > 1, o.NoHeaders)
			lastKind = kind
		}
		if err := p.PrintObj(table, w); err != nil {
			return printed, err
		}
		printed = true
	}
	return printed, nil
}

// tablePrinter prints one resource's rows; -A adds a NAMESPACE column only
// to namespaced resources, where it says something.
func (o *Options) tablePrinter(mapping *meta.RESTMapping, withKind, noHeaders bool) printers.ResourcePrinter {
	return printers.NewTablePrinter(printers.PrintOptions{
		Wide:          o.Output == "wide",
		WithNamespace: o.AllNamespaces && mapping.Scope.Name() == meta.RESTScopeNameNamespace,
		ShowLabels:    o.ShowLabels,
		ColumnLabels:  o.LabelColumns,
		WithKind:      withKind || o.ShowKind,
		Kind:          mapping.GroupVersionKind.GroupKind(),
		NoHeaders:     noHeaders,
	})
}

// toTable turns what the server sent into a Table; objects of resources
// the server cannot print get a NAME/AGE table like kubectl's default.
func toTable(info *resource.Info) (*metav1.Table, error) {
	u, ok := info.Object.(*unstructured.Unstructured)
	if !ok || u.GetKind() != "Table" {
		return defaultTable(info.Object)
	}
	table := &metav1.Table{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, table); err != nil {
		return nil, fmt.Errorf("decoding the server's table: %w", err)
	}
	if err := decodeRowObjects(table); err != nil {
		return nil, err
	}
	return table, nil
}

func decodeRowObjects(table *metav1.Table) error {
	for i := range table.Rows {
		row := &table.Rows[i]
		if row.Object.Raw == nil || row.Object.Object != nil {
			continue
		}
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, row.Object.Raw)
		if err != nil {
			return fmt.Errorf("decoding a table row's object: %w", err)
		}
		row.Object.Object = obj
	}
	return nil
}

func defaultTable(obj runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Age", Type: "string"},
	}}
	add := func(o runtime.Object) error {
		a, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []interface{}{a.GetName(), age(a.GetCreationTimestamp())},
			Object: runtime.RawExtension{Object: o},
		})
		return nil
	}
	if meta.IsListType(obj) {
		return table, meta.EachListItem(obj, add)
	}
	return table, add(obj)
}

// age is kubectl's AGE cell: how long ago, in its short form.
func age(created metav1.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(created.Time))
}

// watch prints the current state (unless --watch-only) and then every
// change, as table rows without headers or as objects.
func (o *Options) watch(ctx context.Context, f cmdutil.Factory, r *resource.Result, objPrinter printers.ResourcePrinter) error {
	if err := r.Err(); err != nil {
		return err
	}
	infos, err := r.Infos()
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		return fmt.Errorf("no resources to watch")
	}
	first := infos[0]
	if len(infos) > 1 {
		// Several names of one type: kubectl prints them all, then
		// refuses to watch more than one.
		if err := o.printAll(infos, objPrinter); err != nil {
			return err
		}
		return fmt.Errorf("you may only watch a single resource or type of resource at a time")
	}
	// One object's own resourceVersion may be older than the server's
	// watch window (410 Expired once it has not changed for a while): as
	// kubectl, watch it from "0", now, and drop the ADDED event that
	// repeats what was just printed. A collection (a Table, or the list
	// itself with --server-print=false or -o) is watched from where the
	// list left off.
	singleName := first.Name
	rv := "0"
	if singleName == "" {
		if a, err := meta.ListAccessor(first.Object); err == nil {
			rv = a.GetResourceVersion()
		}
	}
	skipAdded := singleName != ""
	// One writer for the list and every event: it remembers column widths
	// across flushes, so each event's row lines up under the header. One
	// printer too: it prints the header over the first rows, list's or
	// event's, and lays out events whose tables leave the columns out.
	w := printers.GetNewTabWriter(o.streams.Out)
	var tp printers.ResourcePrinter
	if o.human() {
		tp = o.tablePrinter(first.Mapping, false, o.NoHeaders)
		// Listing returned a Table for the whole collection (or one object).
		t, err := toTable(first)
		if err != nil {
			return err
		}
		if !o.WatchOnly {
			if err := tp.PrintObj(o.asEvent(watch.Added, t), w); err != nil {
				return err
			}
			w.Flush()
		}
	} else if !o.WatchOnly {
		if err := o.printEach(first.Object, objPrinter); err != nil {
			return err
		}
	}

	client, err := f.UnstructuredClientForMapping(first.Mapping)
	if err != nil {
		return err
	}
	fieldSel := o.FieldSelector
	if singleName != "" {
		fieldSel = fields.OneTermEqualSelector("metadata.name", singleName).String()
	}
	ns := first.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	req := client.Get().
		NamespaceIfScoped(ns, first.Mapping.Scope.Name() == meta.RESTScopeNameNamespace).
		Resource(first.Mapping.Resource.Resource).
		Param("watch", "true").
		Param("resourceVersion", rv)
	if o.LabelSelector != "" {
		req = req.Param("labelSelector", o.LabelSelector)
	}
	if fieldSel != "" {
		req = req.Param("fieldSelector", fieldSel)
	}
	if o.human() && o.ServerPrint {
		req = req.SetHeader("Accept", tableAccept)
	}
	wi, err := req.Watch(ctx)
	if err != nil {
		return err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watch error: %v", ev.Object)
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			if skipAdded {
				skipAdded = false
				if ev.Type == watch.Added {
					continue
				}
			}
			if err := o.printEvent(w, ev, tp, objPrinter); err != nil {
				return err
			}
		}
	}
}

// printEvent prints one change: a row through the watch's table printer
// tp, or the object through objPrinter.
func (o *Options) printEvent(w *tabwriter.Writer, ev watch.Event, tp, objPrinter printers.ResourcePrinter) error {
	if !o.human() {
		return objPrinter.PrintObj(o.asEvent(ev.Type, ev.Object), o.streams.Out)
	}
	t, err := toTable(&resource.Info{Object: ev.Object})
	if err != nil {
		return err
	}
	defer w.Flush()
	return tp.PrintObj(o.asEvent(ev.Type, t), w)
}

// asEvent wraps what is printed in its watch event for
// --output-watch-events; the printers show the event's type.
func (o *Options) asEvent(typ watch.EventType, obj runtime.Object) runtime.Object {
	if !o.WatchEvents {
		return obj
	}
	return &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Object: obj}}
}

// printAll prints what a watch of several objects found before refusing it.
func (o *Options) printAll(infos []*resource.Info, objPrinter printers.ResourcePrinter) error {
	if o.human() {
		_, err := o.printTables(infos)
		return err
	}
	for _, info := range infos {
		if err := o.printEach(info.Object, objPrinter); err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) printEach(obj runtime.Object, p printers.ResourcePrinter) error {
	if !meta.IsListType(obj) {
		return p.PrintObj(o.asEvent(watch.Added, obj), o.streams.Out)
	}
	return meta.EachListItem(obj, func(item runtime.Object) error { return p.PrintObj(o.asEvent(watch.Added, item), o.streams.Out) })
}
