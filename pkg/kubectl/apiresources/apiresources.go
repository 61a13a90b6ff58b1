// Package apiresources holds `api-resources`, read from (cached) discovery.
package apiresources

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// Options are api-resources' flags.
type Options struct {
	Output     string
	APIGroup   string
	Namespaced bool
	NoHeaders  bool
	Cached     bool
	Verbs      []string
	Categories []string
	SortBy     string

	streams genericiooptions.IOStreams
}

// Resource is one row: a resource in its preferred group-version.
type Resource struct {
	GroupVersion schema.GroupVersion
	metav1.APIResource
}

// NewCmd returns `api-resources`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "api-resources",
		Short: "Print the supported API resources on the server",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return cmdutil.UsageErrorf(cmd, "unexpected arguments: %v", args)
			}
			return o.Run(f, cmd.Flags().Changed("namespaced"))
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Output, "output", "o", "", "wide or name")
	fl.StringVar(&o.APIGroup, "api-group", "", "Only resources in this API group (\"\" for core is the default: all groups)")
	fl.BoolVar(&o.Namespaced, "namespaced", true, "With --namespaced=false, only cluster-scoped resources; with true, only namespaced ones")
	fl.BoolVar(&o.NoHeaders, "no-headers", false, "Omit headers")
	fl.BoolVar(&o.Cached, "cached", false, "Use the cached list of resources if available")
	fl.StringSliceVar(&o.Verbs, "verbs", nil, "Only resources that support all these verbs")
	fl.StringSliceVar(&o.Categories, "categories", nil, "Only resources in all these categories (e.g. all)")
	fl.StringVar(&o.SortBy, "sort-by", "", "Sort by name or kind instead of by group")
	return cmd
}

// Run prints the resources.
func (o *Options) Run(f cmdutil.Factory, filterNamespaced bool) error {
	if o.Output != "" && o.Output != "wide" && o.Output != "name" {
		return fmt.Errorf("--output %v is not available", o.Output)
	}
	if o.SortBy != "" && o.SortBy != "name" && o.SortBy != "kind" {
		return fmt.Errorf("--sort-by accepts only name or kind")
	}
	dc, err := f.ToDiscoveryClient()
	if err != nil {
		return err
	}
	if !o.Cached {
		dc.Invalidate()
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	var rows []Resource
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		if o.APIGroup != "" && gv.Group != o.APIGroup {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			if filterNamespaced && r.Namespaced != o.Namespaced {
				continue
			}
			if len(r.Verbs) == 0 || !sets.New(r.Verbs...).HasAll(o.Verbs...) || !sets.New(r.Categories...).HasAll(o.Categories...) {
				continue
			}
			rows = append(rows, Resource{GroupVersion: gv, APIResource: r})
		}
	}
	Sort(rows, o.SortBy)
	w := printers.GetNewTabWriter(o.streams.Out)
	defer w.Flush()
	if o.Output == "name" {
		for _, r := range rows {
			name := r.Name
			if r.GroupVersion.Group != "" {
				name += "." + r.GroupVersion.Group
			}
			fmt.Fprintln(w, name)
		}
		return err
	}
	if !o.NoHeaders {
		h := "NAME\tSHORTNAMES\tAPIVERSION\tNAMESPACED\tKIND"
		if o.Output == "wide" {
			h += "\tVERBS\tCATEGORIES"
		}
		fmt.Fprintln(w, h)
	}
	for _, r := range rows {
		line := fmt.Sprintf("%s\t%s\t%s\t%v\t%s", r.Name, strings.Join(r.ShortNames, ","), r.GroupVersion.String(), r.Namespaced, r.Kind)
		if o.Output == "wide" {
			line += fmt.Sprintf("\t%s\t%s", strings.Join(r.Verbs, ","), strings.Join(r.Categories, ","))
		}
		fmt.Fprintln(w, line)
	}
	return err
}

// Sort orders rows as kubectl does: by group (or by the name or kind that
// sortBy names), then by resource name.
func Sort(rows []Resource, sortBy string) {
	key := func(r Resource) string {
		switch sortBy {
		case "name":
			return r.Name
		case "kind":
			return r.Kind
		}
		return r.GroupVersion.Group
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if ki, kj := key(rows[i]), key(rows[j]); ki != kj {
			return ki < kj
		}
		return rows[i].Name < rows[j].Name
	})
}
