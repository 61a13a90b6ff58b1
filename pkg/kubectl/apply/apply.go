// Package apply holds `apply` and `create`: client-side apply with the
// last-applied-configuration annotation and a three-way patch.
package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi3"
	kapply "k8s.io/kubectl/pkg/cmd/apply"
	kubectlcreate "k8s.io/kubectl/pkg/cmd/create"
	kdelete "k8s.io/kubectl/pkg/cmd/delete"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/kubectl/dryrun"
	"github.com/kube-lite/kube-lite/pkg/kubectl/validate"
)

// LastAppliedAnnotation records what the user last applied, the "original"
// of the three-way patch.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// maxPatchRetries bounds how often a patch is recomputed after a 409.
const maxPatchRetries = 5

// Options are the flags shared by apply and create.
type Options struct {
	Filenames resource.FilenameOptions
	Validate  string
	// DryRun is --dry-run, set from the flag when the command runs.
	DryRun cmdutil.DryRunStrategy
	// PrintFlags are kubectl's -o: the "created" line by default, or the
	// objects as the server returned them.
	PrintFlags *genericclioptions.PrintFlags
	// SaveConfig (create only) records the last-applied annotation, so
	// that apply can manage the object later.
	SaveConfig bool
	// FieldManager names the writer of the object's fields to the server.
	FieldManager string
	// Overwrite (apply only, as kubectl's --overwrite) lets the file win
	// over fields others changed since the last apply; without it such a
	// change is refused.
	Overwrite bool
	// DeleteFlags (apply only) are kubectl's --force, --grace-period,
	// --cascade, --timeout and --wait; deleteOpts what they parse to.
	DeleteFlags *kdelete.DeleteFlags
	deleteOpts  *kdelete.DeleteOptions
	// Selector (apply only, -l) picks the file's objects to apply and the
	// live ones --prune may delete.
	Selector     string
	PruneOptions PruneOptions

	streams genericiooptions.IOStreams
}

func addCommonFlags(cmd *cobra.Command, o *Options, verb string) {
	cmd.Flags().StringSliceVarP(&o.Filenames.Filenames, "filename", "f", nil, "Files, directories or - (stdin) to "+verb)
	cmd.Flags().BoolVarP(&o.Filenames.Recursive, "recursive", "R", false, "Process the directory used in -f recursively")
	cmdutil.AddKustomizeFlag(cmd.Flags(), &o.Filenames.Kustomize)
	cmd.Flags().StringVar(&o.Validate, "validate", "strict", "Client-side validation against the server's schema: strict, warn or ignore")
	cmdutil.AddDryRunFlag(cmd)
	o.PrintFlags = genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)
	o.PrintFlags.AddFlags(cmd)
}

// runE runs apply (apply=true) or create with no arguments but the flags.
func (o *Options) runE(f cmdutil.Factory, apply bool) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 0 {
			return cmdutil.UsageErrorf(cmd, "Unexpected args: %v", args)
		}
		var err error
		if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
			return err
		}
		if o.DeleteFlags != nil {
			if o.deleteOpts, err = o.DeleteFlags.ToOptions(nil, o.streams); err != nil {
				return err
			}
			if o.DryRun == cmdutil.DryRunServer && o.deleteOpts.ForceDeletion {
				return fmt.Errorf("--dry-run=server cannot be used with --force")
			}
			if err := o.completePrune(f, o.Selector); err != nil {
				return err
			}
		}
		return o.Run(cmd.Context(), f, apply)
	}
}

// NewApplyCmd returns `apply`.
func NewApplyCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams, DeleteFlags: newDeleteFlags()}
	cmd := &cobra.Command{
		Use:   "apply -f FILENAME",
		Short: "Create or update objects from files, keeping what you removed from the file removed from the object",
		RunE:  o.runE(f, true),
	}
	addCommonFlags(cmd, o, "apply")
	cmd.Flags().StringVar(&o.FieldManager, "field-manager", "kubectl-client-side-apply", "Name of the manager used to track field ownership.")
	cmd.Flags().BoolVar(&o.Overwrite, "overwrite", true, "Automatically resolve conflicts between the modified and live configuration by using values from the modified configuration")
	o.DeleteFlags.AddFlags(cmd)
	cmdutil.AddLabelSelectorFlagVar(cmd, &o.Selector)
	cmd.Flags().BoolVar(&o.PruneOptions.Prune, "prune", false, "Automatically delete resource objects, that do not appear in the configs and are created by either apply or create --save-config. Should be used with either -l or --all.")
	cmd.Flags().StringArrayVar(&o.PruneOptions.Allowlist, "prune-allowlist", nil, "Overwrite the default allowlist with <group/version/kind> for --prune")
	cmd.Flags().BoolVar(&o.PruneOptions.All, "all", false, "Select all resources in the namespace of the specified resource types.")
	// kubectl's own: they read or rewrite only the last-applied annotation.
	cmd.AddCommand(
		kapply.NewCmdApplyViewLastApplied(f, streams),
		kapply.NewCmdApplySetLastApplied(f, streams),
		kapply.NewCmdApplyEditLastApplied(f, streams),
	)
	return cmd
}

// newDeleteFlags are the deletion flags kubectl's apply takes: --force
// deletes and re-creates an object the server refuses to patch, the others
// say how (also for --prune's deletions). --wait is taken as kubectl 1.36
// takes it: accepted and read by nothing.
func newDeleteFlags() *kdelete.DeleteFlags {
	cascade, gracePeriod, force, timeout, wait := "background", -1, false, time.Duration(0), false
	return &kdelete.DeleteFlags{CascadingStrategy: &cascade, GracePeriod: &gracePeriod, Force: &force, Timeout: &timeout, Wait: &wait}
}

// NewCreateCmd returns `create`.
func NewCreateCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams}
	cmd := &cobra.Command{
		Use:   "create -f FILENAME",
		Short: "Create objects from files",
		RunE:  o.runE(f, false),
	}
	addCommonFlags(cmd, o, "create")
	cmd.Flags().BoolVar(&o.SaveConfig, "save-config", false, "Record the configuration in the last-applied annotation, for later applies")
	cmd.Flags().StringVar(&o.FieldManager, "field-manager", "kubectl-create", "Name of the manager used to track field ownership.")
	// kubectl's generators (`create deployment web --image=...`, usually
	// with --dry-run=client -o yaml to write a manifest), for the kinds
	// kube-lite serves.
	cmd.AddCommand(
		kubectlcreate.NewCmdCreateNamespace(f, streams),
		kubectlcreate.NewCmdCreateQuota(f, streams),
		kubectlcreate.NewCmdCreateSecret(f, streams),
		kubectlcreate.NewCmdCreateConfigMap(f, streams),
		kubectlcreate.NewCmdCreateServiceAccount(f, streams),
		kubectlcreate.NewCmdCreateService(f, streams),
		kubectlcreate.NewCmdCreateDeployment(f, streams),
		kubectlcreate.NewCmdCreateJob(f, streams),
		kubectlcreate.NewCmdCreateRole(f, streams),
		kubectlcreate.NewCmdCreateRoleBinding(f, streams),
		kubectlcreate.NewCmdCreateClusterRole(f, streams),
		kubectlcreate.NewCmdCreateClusterRoleBinding(f, streams),
	)
	return cmd
}

// NewValidator builds the client-side validator for a --validate value.
func NewValidator(f cmdutil.Factory, directive string) (resource.ContentValidator, error) {
	mode, err := validate.ParseDirective(directive)
	if err != nil {
		return nil, err
	}
	if mode == validate.Ignore {
		return nil, nil
	}
	dc, err := f.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return validate.New(openapi3.NewRoot(dc.OpenAPIV3()), mode), nil
}

// Run applies (apply=true) or creates every object in the files. As with
// kubectl, a document that cannot be parsed or has no kind ends its file
// there (the objects read before it are still sent, and its error is
// reported first among the others, after them); one of a kind the server
// does not serve, or that the server refuses, fails alone.
func (o *Options) Run(ctx context.Context, f cmdutil.Factory, apply bool) error {
	if cmdutil.IsFilenameSliceEmpty(o.Filenames.Filenames, o.Filenames.Kustomize) {
		return fmt.Errorf("must specify one of -f and -k")
	}
	// A bad -o fails before anything is sent. With -o yaml|json this is
	// also the printer of the objects themselves.
	wholePrinter, err := o.printer("")
	if err != nil {
		return err
	}
	validator, err := NewValidator(f, o.Validate)
	if err != nil {
		return err
	}
	ns, enforce, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	r := f.NewBuilder().
		Unstructured().
		Schema(validator).
		NamespaceParam(ns).DefaultNamespace().
		FilenameParam(enforce, &o.Filenames).
		LabelSelectorParam(o.Selector).
		ContinueOnError().
		Flatten().
		Do()
	if err := r.Err(); err != nil {
		return err
	}
	// As with kubectl, every failure is reported at the end (apply puts
	// the files' own first); an object the server refuses does not stop
	// the others.
	var errs []error
	infos, err := r.Infos()
	if err != nil {
		errs = append(errs, flatten(err)...)
	}
	fileErrs := len(errs)
	if len(infos) == 0 && len(errs) == 0 {
		return fmt.Errorf("no objects passed to %s", map[bool]string{true: "apply", false: "create"}[apply])
	}
	// With -o yaml|json (any format but name), create prints each object
	// and apply prints them together at the end, as one List when
	// there are several; otherwise each gets its "created" line.
	whole := o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat != "" && *o.PrintFlags.OutputFormat != "name"
	var done []*resource.Info
	v := visited{namespaces: sets.New[string](), uids: sets.New[types.UID]()}
	if enforce {
		v.namespaces.Insert(ns)
	}
	for _, info := range infos {
		var op string
		if info.Namespaced() {
			v.namespaces.Insert(info.Namespace)
		}
		if apply {
			op, err = o.applyOne(ctx, info)
		} else {
			op, err = o.createOne(info)
		}
		if err != nil {
			// kubectl names the step that failed: apply creating a
			// missing object says "creating", a refused patch is shown
			// with the object it was for.
			var ue unsourcedError
			if errors.As(err, &ue) {
				errs = append(errs, ue.error)
				continue
			}
			verb := "applying"
			var se *stepError
			if !apply || op == "created" {
				verb = "creating"
			} else if errors.As(err, &se) {
				verb, err = se.step, se.err
			}
			errs = append(errs, cmdutil.AddSourceToErr(verb, info.Source, err))
			continue
		}
		if a, err := meta.Accessor(info.Object); err == nil {
			v.uids.Insert(a.GetUID())
			if apply && op != "created" && a.GetDeletionTimestamp() != nil {
				// As kubectl: the change lands, but the object is
				// going away (a finalizer still holds it).
				fmt.Fprintf(o.streams.ErrOut, "Warning: Detected changes to resource %s which is currently being deleted.\n", a.GetName())
			}
		}
		if whole && apply {
			done = append(done, info)
			continue
		}
		p := wholePrinter
		if !whole {
			if p, err = o.printer(op); err != nil {
				return err
			}
		}
		if err := p.PrintObj(info.Object, o.streams.Out); err != nil {
			return err
		}
	}
	// As kubectl, apply prints the objects with -o only after a clean
	// apply: a failure prints none of those it did apply.
	if whole && apply && len(done) > 0 && len(errs) == 0 {
		obj, err := asList(done)
		if err != nil {
			return err
		}
		if err := wholePrinter.PrintObj(obj, o.streams.Out); err != nil {
			return err
		}
	}
	if !apply {
		// kubectl's create reports the server's refusals first and what
		// was wrong with the files after them.
		errs = append(errs[fileErrs:], errs[:fileErrs]...)
	}
	if len(errs) > 0 || !apply || !o.PruneOptions.Prune {
		// As kubectl, nothing is pruned after a failed apply.
		return utilerrors.NewAggregate(errs)
	}
	return o.prune(ctx, f, v)
}

// printer prints an object as -o asks, or its line for operation op
// ("created", "configured", ...) with the dry run's suffix.
func (o *Options) printer(op string) (printers.ResourcePrinter, error) {
	o.PrintFlags.NamePrintFlags.Operation = op + dryrun.Suffix(o.DryRun)
	return o.PrintFlags.ToPrinter()
}

// asList is the one object, or a v1 List of several.
func asList(infos []*resource.Info) (runtime.Object, error) {
	if len(infos) == 1 {
		return infos[0].Object, nil
	}
	objs := make([]runtime.Object, 0, len(infos))
	for _, info := range infos {
		objs = append(objs, info.Object)
	}
	list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	return list, meta.SetList(list, objs)
}

// helperFor also asks the server for the same field validation as the
// client did, so that --validate=ignore silences the server's warnings too.
func (o *Options) helperFor(info *resource.Info) *resource.Helper {
	h := resource.NewHelper(info.Client, info.Mapping).DryRun(o.DryRun == cmdutil.DryRunServer).WithFieldManager(o.FieldManager)
	switch mode, _ := validate.ParseDirective(o.Validate); mode {
	case validate.Strict:
		return h.WithFieldValidation(metav1.FieldValidationStrict)
	case validate.Warn:
		return h.WithFieldValidation(metav1.FieldValidationWarn)
	default:
		return h.WithFieldValidation(metav1.FieldValidationIgnore)
	}
}

func (o *Options) createOne(info *resource.Info) (string, error) {
	if o.SaveConfig {
		_, lastApplied, err := modifiedConfiguration(info.Object)
		if err != nil {
			return "", err
		}
		if err := setAnnotation(info.Object, lastApplied); err != nil {
			return "", err
		}
	}
	if o.DryRun == cmdutil.DryRunClient {
		return "created", nil
	}
	obj, err := o.helperFor(info).Create(info.Namespace, true, info.Object)
	if err != nil {
		return "", err
	}
	return "created", info.Refresh(obj, true)
}

func (o *Options) applyOne(ctx context.Context, info *resource.Info) (string, error) {
	if info.Name == "" {
		// apply finds the object by its name: kubectl refuses one the
		// server is to name before asking the server anything.
		if a, err := meta.Accessor(info.Object); err == nil && a.GetGenerateName() != "" {
			return "", unsourcedError{fmt.Errorf("from %s: cannot use generate name with apply", a.GetGenerateName())}
		}
	}
	modified, lastApplied, err := modifiedConfiguration(info.Object)
	if err != nil {
		return "", &stepError{step: fmt.Sprintf("retrieving modified configuration from:\n%s\nfor:", info), err: err}
	}
	h := o.helperFor(info)
	current, err := h.Get(info.Namespace, info.Name)
	if apierrors.IsNotFound(err) {
		if err := setAnnotation(info.Object, lastApplied); err != nil {
			return "", err
		}
		if o.DryRun == cmdutil.DryRunClient {
			return "created", nil
		}
		obj, err := h.Create(info.Namespace, true, info.Object)
		if err != nil {
			return "created", err
		}
		return "created", info.Refresh(obj, true)
	}
	if err != nil {
		// A document without a name fails here too, as with kubectl:
		// client-go refuses to get an empty name.
		return "", &stepError{step: fmt.Sprintf("retrieving current configuration of:\n%s\nfrom server for:", info), err: err}
	}
	if a, err := meta.Accessor(current); err == nil {
		if _, ok := a.GetAnnotations()[LastAppliedAnnotation]; !ok {
			fmt.Fprintf(o.streams.ErrOut, "Warning: resource %[1]s is missing the %[2]s annotation which is required by %[3]s apply. "+
				"%[3]s apply should only be used on resources created declaratively by either %[3]s create --save-config or %[3]s apply. "+
				"The missing annotation will be patched automatically.\n", info.ObjectName(), LastAppliedAnnotation, "kubectl-lite")
		}
	}
	for attempt := 0; ; attempt++ {
		patch, pt, err := ThreeWayPatch(info.Mapping.GroupVersionKind, modified, current, o.Overwrite)
		if err != nil {
			return "", patchStepError(nil, info, cmdutil.AddSourceToErr("patching", info.Source, creatingPatchError(modified, current, err)))
		}
		if string(patch) == "{}" {
			return "unchanged", info.Refresh(current, true)
		}
		if o.DryRun == cmdutil.DryRunClient {
			// What the server would hold after the patch, for -o.
			patched, err := patchLocally(info.Mapping.GroupVersionKind, current, patch, pt)
			if err != nil {
				return "", err
			}
			return "configured", info.Refresh(patched, true)
		}
		obj, err := h.Patch(info.Namespace, info.Name, pt, patch, &metav1.PatchOptions{})
		if err == nil {
			return "configured", info.Refresh(obj, true)
		}
		if apierrors.IsConflict(err) && attempt+1 < maxPatchRetries && ctx.Err() == nil {
			if current, err = h.Get(info.Namespace, info.Name); err != nil {
				return "", err
			}
			continue
		}
		if (apierrors.IsConflict(err) || apierrors.IsInvalid(err)) && o.deleteOpts != nil && o.deleteOpts.ForceDeletion {
			// As kubectl's --force: what cannot be patched (an immutable
			// field) is deleted and created again from the file.
			obj, err := o.deleteAndCreate(ctx, h, info, current, modified)
			if err != nil {
				// kubectl shows the object it tried to create, as encoded
				// (a trailing newline), in place of the patch.
				return "", patchStepError(append(modified, '\n'), info, err)
			}
			return "configured", info.Refresh(obj, true)
		}
		return "", patchStepError(patch, info, cmdutil.AddSourceToErr("patching", info.Source, err))
	}
}

// unsourcedError is reported as it is, without the file it came from, as
// kubectl reports it.
type unsourcedError struct{ error }

// stepError is a failure of one of apply's steps; kubectl's report names
// the step and the object, in place of "applying".
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// patchStepError is a failure once apply has computed (or tried to compute)
// a patch; kubectl reports it with the patch and the object it was for.
func patchStepError(patch []byte, info *resource.Info, err error) error {
	return &stepError{step: fmt.Sprintf("applying patch:\n%s\nto:\n%v\nfor:", patch, info), err: err}
}

// creatingPatchError is kubectl's report of a patch it could not compute,
// which --overwrite=false gives for any field changed since the last apply.
func creatingPatchError(modified []byte, current runtime.Object, err error) error {
	cur, jerr := json.Marshal(current)
	if jerr != nil {
		return err
	}
	var original string
	if a, aerr := meta.Accessor(current); aerr == nil {
		original = a.GetAnnotations()[LastAppliedAnnotation]
	}
	// kubectl shows modified and current as encoded: each ends its line.
	return fmt.Errorf("creating patch with:\noriginal:\n%s\nmodified:\n%s\n\ncurrent:\n%s\n\nfor: %w", original, modified, cur, err)
}

// deleteOptions are what --cascade and --grace-period ask of the deletions
// apply makes (--force's and --prune's).
func (o *Options) deleteOptions() metav1.DeleteOptions {
	opts := metav1.DeleteOptions{PropagationPolicy: &o.deleteOpts.CascadingStrategy}
	if o.deleteOpts.GracePeriod >= 0 {
		opts.GracePeriodSeconds = ptr.To(int64(o.deleteOpts.GracePeriod))
	}
	return opts
}

// deleteAndCreate replaces the live object by the one in the file: it is
// deleted as --cascade and --grace-period say, awaited for --timeout (zero:
// it must be gone at once) and created again. If the new object is refused,
// the old one is put back and the refusal still reported.
func (o *Options) deleteAndCreate(ctx context.Context, h *resource.Helper, info *resource.Info, current runtime.Object, modified []byte) (runtime.Object, error) {
	opts := o.deleteOptions()
	if _, err := h.DeleteWithOptions(info.Namespace, info.Name, &opts); err != nil {
		return nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, o.deleteOpts.Timeout, true, func(context.Context) (bool, error) {
		if _, err := h.Get(info.Namespace, info.Name); !apierrors.IsNotFound(err) {
			return false, err
		}
		return true, nil
	}); err != nil {
		return nil, err
	}
	replacement := &unstructured.Unstructured{}
	if err := replacement.UnmarshalJSON(modified); err != nil {
		return nil, err
	}
	created, err := h.Create(info.Namespace, true, replacement)
	if err == nil {
		return created, nil
	}
	if _, rerr := h.Create(info.Namespace, true, current); rerr != nil {
		return nil, fmt.Errorf("An error occurred force-replacing the existing object with the newly provided one:\n\n%w.\n\nAdditionally, an error occurred attempting to restore the original object:\n\n%w", err, rerr)
	}
	return nil, err
}

// modifiedConfiguration is the object as the user wrote it, carrying the
// annotation that records exactly that (minus the annotation itself), and
// the annotation's value, so that it need not be read back out of the JSON.
func modifiedConfiguration(obj runtime.Object) ([]byte, string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, "", fmt.Errorf("expected an unstructured object, got %T", obj)
	}
	c := u.DeepCopy()
	annots := c.GetAnnotations()
	if annots == nil {
		annots = map[string]string{}
	}
	delete(annots, LastAppliedAnnotation)
	// The recorded file keeps an (empty) annotations map, byte for byte
	// what kubectl records: otherwise each client sees the other's
	// annotation as a change and reports every apply as "configured".
	c.SetAnnotations(annots)
	original, err := json.Marshal(c.Object)
	if err != nil {
		return nil, "", err
	}
	lastApplied := string(original) + "\n"
	annots[LastAppliedAnnotation] = lastApplied
	c.SetAnnotations(annots)
	modified, err := json.Marshal(c.Object)
	return modified, lastApplied, err
}

// setAnnotation records lastApplied, a value from modifiedConfiguration,
// in obj's last-applied annotation.
func setAnnotation(obj runtime.Object, lastApplied string) error {
	a, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	annots := a.GetAnnotations()
	if annots == nil {
		annots = map[string]string{}
	}
	annots[LastAppliedAnnotation] = lastApplied
	a.SetAnnotations(annots)
	return nil
}

// ThreeWayPatch computes the patch from current to modified that also
// deletes what the previous apply (the annotation on current) set and the
// new configuration no longer has. Built-in kinds get a strategic merge
// patch (lists merge by key); others a JSON merge patch.
// Without overwrite, a field changed since the last apply is a conflict.
func ThreeWayPatch(gvk schema.GroupVersionKind, modified []byte, current runtime.Object, overwrite bool) ([]byte, types.PatchType, error) {
	cur, err := json.Marshal(current)
	if err != nil {
		return nil, "", err
	}
	a, err := meta.Accessor(current)
	if err != nil {
		return nil, "", err
	}
	original := []byte(a.GetAnnotations()[LastAppliedAnnotation])
	if len(original) == 0 {
		original = nil
	}
	preconditions := []mergepatch.PreconditionFunc{
		mergepatch.RequireKeyUnchanged("apiVersion"),
		mergepatch.RequireKeyUnchanged("kind"),
		mergepatch.RequireMetadataKeyUnchanged("name"),
	}
	typed, err := scheme.Scheme.New(gvk)
	if err == nil {
		lookup, err := strategicpatch.NewPatchMetaFromStruct(typed)
		if err != nil {
			return nil, "", err
		}
		p, err := strategicpatch.CreateThreeWayMergePatch(original, modified, cur, lookup, overwrite, preconditions...)
		return p, types.StrategicMergePatchType, err
	}
	p, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, cur, preconditions...)
	return p, types.MergePatchType, err
}

// patchLocally applies a patch from ThreeWayPatch to current.
func patchLocally(gvk schema.GroupVersionKind, current runtime.Object, patch []byte, pt types.PatchType) (runtime.Object, error) {
	cur, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var patched []byte
	if pt == types.StrategicMergePatchType {
		typed, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		patched, err = strategicpatch.StrategicMergePatch(cur, patch, typed)
		if err != nil {
			return nil, err
		}
	} else if patched, err = jsonpatch.MergePatch(cur, patch); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(patched)
}

// flatten is each error an aggregate holds, or err itself.
func flatten(err error) []error {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		return utilerrors.Flatten(agg).Errors()
	}
	return []error{err}
}
