// Package selection holds what the commands that act on objects named by
// files (-f), a label selector (-l) or TYPE NAME arguments share: those
// flags and the start of the resource builder that resolves them, so that
// delete, describe, rollout, scale and wait read them the same way.
package selection

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/resource"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/scheme"
)

// Flags are -f, -R and -l.
type Flags struct {
	Filenames     resource.FilenameOptions
	LabelSelector string
}

// AddFlags registers -f with filenameUsage, -l, and -R when the command
// reads directories recursively.
func (s *Flags) AddFlags(cmd *cobra.Command, filenameUsage string, recursive bool) {
	fl := cmd.Flags()
	fl.StringSliceVarP(&s.Filenames.Filenames, "filename", "f", nil, filenameUsage)
	if recursive {
		fl.BoolVarP(&s.Filenames.Recursive, "recursive", "R", false, "Process the directory used in -f recursively")
	}
	fl.StringVarP(&s.LabelSelector, "selector", "l", "", "Label selector")
}

// NoFiles reports that no -f was given.
func (s *Flags) NoFiles() bool {
	return cmdutil.IsFilenameSliceEmpty(s.Filenames.Filenames, s.Filenames.Kustomize)
}

// Builder starts resolving the selection in the kubeconfig's namespace (ns,
// which objects without one default to): unstructured objects, so that
// every resource the server serves works, and all errors collected rather
// than stopping at the first object. Files that name another namespace than
// an explicit --namespace are refused, as kubectl does.
func (s *Flags) Builder(f cmdutil.Factory) (b *resource.Builder, ns string, err error) {
	return s.builder(f, false)
}

// TypedBuilder is Builder with the scheme's Go types instead, for kubectl's
// helpers that take typed objects (rollout's pauser, restarter and
// rollbacker).
func (s *Flags) TypedBuilder(f cmdutil.Factory) (b *resource.Builder, ns string, err error) {
	return s.builder(f, true)
}

func (s *Flags) builder(f cmdutil.Factory, typed bool) (b *resource.Builder, ns string, err error) {
	ns, enforce, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	b = f.NewBuilder()
	if typed {
		b = b.WithScheme(scheme.Scheme, scheme.Scheme.PrioritizedVersionsAllGroups()...)
	} else {
		b = b.Unstructured()
	}
	b = b.ContinueOnError().
		NamespaceParam(ns).DefaultNamespace().
		FilenameParam(enforce, &s.Filenames).
		LabelSelectorParam(s.LabelSelector)
	return b, ns, nil
}
