package job

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Upstream's limits on a job's spec. They bound the size of the index
// bookkeeping (status.completedIndexes, status.failedIndexes) and of the
// policies the controller evaluates for every failed pod.
const (
	maxParallelismForIndexedJob             = 100_000
	maxFailedIndexesForIndexedJob           = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000
	maxPodFailurePolicyRules                = 20
	maxOnExitCodesValues                    = 255
	maxOnPodConditionsPatterns              = 20
	maxManagedByLength                      = 63
	maxSucceededIndexesLength               = 64 * 1024
	maxSuccessPolicyRules                   = 20
)

// The enumerations below are listed sorted, as upstream's messages list them.
var (
	podFailurePolicyActions = []batchv1.PodFailurePolicyAction{
		batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore,
	}
	onExitCodesOperators = []batchv1.PodFailurePolicyOnExitCodesOperator{
		batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn,
	}
	conditionStatuses = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
)

func validateSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	nonneg := func(v *int32, name string) {
		if v != nil {
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*v), fldPath.Child(name))...)
		}
	}
	nonneg(spec.Parallelism, "parallelism")
	nonneg(spec.Completions, "completions")
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	nonneg(spec.BackoffLimit, "backoffLimit")
	nonneg(spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	nonneg(spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	nonneg(spec.MaxFailedIndexes, "maxFailedIndexes")
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	if spec.ManagedBy != nil {
		mbPath := fldPath.Child("managedBy")
		allErrs = append(allErrs, utilvalidation.IsDomainPrefixedPath(mbPath, *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			allErrs = append(allErrs, field.TooLong(mbPath, "", maxManagedByLength))
		}
	}

	indexed := isIndexed(spec)
	if spec.CompletionMode != nil {
		switch *spec.CompletionMode {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			allErrs = append(allErrs, validateIndexedLimits(spec, fldPath)...)
		default:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("completionMode"), *spec.CompletionMode,
				[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	// Per-index limits only mean something when pods have an index.
	if ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.NonIndexedCompletion {
		if spec.BackoffLimitPerIndex != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}

	if spec.PodFailurePolicy != nil {
		allErrs = append(allErrs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		spPath := fldPath.Child("successPolicy")
		if !indexed {
			allErrs = append(allErrs, field.Invalid(spPath, *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			allErrs = append(allErrs, validateSuccessPolicy(spec, spPath)...)
		}
	}
	if spec.PodReplacementPolicy != nil {
		prp := *spec.PodReplacementPolicy
		switch {
		case spec.PodFailurePolicy != nil:
			if prp != batchv1.Failed {
				allErrs = append(allErrs, field.NotSupported(fldPath.Child("podReplacementPolicy"), prp, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		case prp != batchv1.Failed && prp != batchv1.TerminatingOrFailed:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("podReplacementPolicy"), prp,
				[]batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		}
	}

	tPath := fldPath.Child("template")
	allErrs = append(allErrs, validation.PodTemplateSpec(&spec.Template, tPath)...)
	// A job's pods run to completion; Always would restart them forever. An
	// unset policy was defaulted to Always, so upstream asks for a value.
	rpPath := tPath.Child("spec", "restartPolicy")
	switch rp := spec.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		allErrs = append(allErrs, field.Required(rpPath, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		allErrs = append(allErrs, field.NotSupported(rpPath, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		// The policy judges failed pods; with OnFailure the kubelet restarts
		// containers in place and the pod never fails.
		allErrs = append(allErrs, field.Invalid(rpPath, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}

	selPath := fldPath.Child("selector")
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(selPath, ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		// Generated or manual, the selector must match the pods the job makes.
		if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	return allErrs
}

// validateIndexedLimits checks an Indexed job's counts against the limits
// that keep its per-index status small.
func validateIndexedLimits(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mode := batchv1.IndexedCompletion
	if spec.Completions == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", mode)))
	}
	if p := ptr.Deref(spec.Parallelism, 0); p > maxParallelismForIndexedJob {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), p,
			fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, mode)))
	}
	mfiPath := fldPath.Child("maxFailedIndexes")
	if spec.Completions != nil && spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > *spec.Completions {
		allErrs = append(allErrs, field.Invalid(mfiPath, *spec.MaxFailedIndexes, "must be less than or equal to completions"))
	}
	if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
		allErrs = append(allErrs, field.Invalid(mfiPath, *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if spec.Completions == nil || *spec.Completions <= completionsSoftLimit || spec.BackoffLimitPerIndex == nil {
		return allErrs
	}
	// Above the soft limit, failed indexes are tracked only when bounded.
	suffix := fmt.Sprintf("when completions are above %d and used with backoff limit per index", completionsSoftLimit)
	if spec.MaxFailedIndexes == nil {
		allErrs = append(allErrs, field.Required(mfiPath, fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
	}
	if p := ptr.Deref(spec.Parallelism, 0); p > parallelismLimitForHighCompletions {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), p,
			fmt.Sprintf("must be less than or equal to %d %s", parallelismLimitForHighCompletions, suffix)))
	}
	if m := ptr.Deref(spec.MaxFailedIndexes, 0); m > maxFailedIndexesLimitForHighCompletions {
		allErrs = append(allErrs, field.Invalid(mfiPath, m, fmt.Sprintf("must be less than or equal to %d %s", maxFailedIndexesLimitForHighCompletions, suffix)))
	}
	return allErrs
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.PodFailurePolicy.Rules
	if len(rules) > maxPodFailurePolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range spec.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range rules {
		allErrs = append(allErrs, validatePodFailurePolicyRule(spec, &rules[i], rulesPath.Index(i), containers)...)
	}
	return allErrs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, rulePath *field.Path, containers sets.Set[string]) field.ErrorList {
	var allErrs field.ErrorList
	actionPath := rulePath.Child("action")
	switch {
	case rule.Action == "":
		allErrs = append(allErrs, field.Required(actionPath, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			allErrs = append(allErrs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !slices.Contains(podFailurePolicyActions, rule.Action):
		allErrs = append(allErrs, field.NotSupported(actionPath, rule.Action, podFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		allErrs = append(allErrs, validateOnExitCodes(rule.OnExitCodes, rulePath.Child("onExitCodes"), containers)...)
	}
	if len(rule.OnPodConditions) > 0 {
		allErrs = append(allErrs, validateOnPodConditions(rule.OnPodConditions, rulePath.Child("onPodConditions"))...)
	}
	switch {
	case rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0:
		allErrs = append(allErrs, field.Invalid(rulePath, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0:
		allErrs = append(allErrs, field.Invalid(rulePath, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return allErrs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, fldPath *field.Path, containers sets.Set[string]) field.ErrorList {
	var allErrs field.ErrorList
	opPath := fldPath.Child("operator")
	switch {
	case req.Operator == "":
		allErrs = append(allErrs, field.Required(opPath, fmt.Sprintf("valid values: %q", onExitCodesOperators)))
	case !slices.Contains(onExitCodesOperators, req.Operator):
		allErrs = append(allErrs, field.NotSupported(opPath, req.Operator, onExitCodesOperators))
	}
	if req.ContainerName != nil && !containers.Has(*req.ContainerName) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("containerName"), *req.ContainerName,
			"must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := fldPath.Child("values")
	switch n := len(req.Values); {
	case n == 0:
		allErrs = append(allErrs, field.Invalid(valuesPath, req.Values, "at least one value is required"))
	case n > maxOnExitCodesValues:
		allErrs = append(allErrs, field.TooMany(valuesPath, n, maxOnExitCodesValues))
	}
	seen := sets.New[int32]()
	for i, v := range req.Values {
		vPath := valuesPath.Index(i)
		// Exit code 0 is success: a rule "In [0]" would act on pods that
		// did not fail.
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			allErrs = append(allErrs, field.Invalid(vPath, v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			allErrs = append(allErrs, field.Duplicate(vPath, v))
		}
		seen.Insert(v)
	}
	if !slices.IsSorted(req.Values) {
		allErrs = append(allErrs, field.Invalid(valuesPath, req.Values, "must be ordered"))
	}
	return allErrs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(patterns) > maxOnPodConditionsPatterns {
		allErrs = append(allErrs, field.TooMany(fldPath, len(patterns), maxOnPodConditionsPatterns))
	}
	for i, p := range patterns {
		pPath := fldPath.Index(i)
		allErrs = append(allErrs, validation.Messages(pPath.Child("type"), p.Type, utilvalidation.IsQualifiedName(string(p.Type)))...)
		statusPath := pPath.Child("status")
		switch {
		case p.Status == "":
			allErrs = append(allErrs, field.Required(statusPath, fmt.Sprintf("valid values: %q", conditionStatuses)))
		case !slices.Contains(conditionStatuses, p.Status):
			allErrs = append(allErrs, field.NotSupported(statusPath, p.Status, conditionStatuses))
		}
	}
	return allErrs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		allErrs = append(allErrs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRules))
	}
	for i, rule := range rules {
		rulePath := rulesPath.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			allErrs = append(allErrs, field.Required(rulePath, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		// An Indexed job without completions is already refused; there
		// is nothing to check the indexes against.
		if spec.Completions == nil {
			continue
		}
		completions := *spec.Completions
		var named int32
		if rule.SucceededIndexes != nil {
			idxPath := rulePath.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSucceededIndexesLength {
				allErrs = append(allErrs, field.TooLong(idxPath, "", maxSucceededIndexesLength))
			}
			var err error
			if named, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
				allErrs = append(allErrs, field.Invalid(idxPath, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err)))
			}
		}
		if rule.SucceededCount != nil {
			cPath := rulePath.Child("succeededCount")
			n := *rule.SucceededCount
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(n), cPath)...)
			if n > completions {
				allErrs = append(allErrs, field.Invalid(cPath, n, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && n > named {
				allErrs = append(allErrs, field.Invalid(cPath, n, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", named)))
			}
		}
	}
	return allErrs
}

// countIndexes parses an index list such as "1,3-5,7" (intervals ascending,
// every index below completions) and returns how many indexes it names.
func countIndexes(s string, completions int32) (int32, error) {
	intervals, err := parseIndexes(s, completions)
	if err != nil {
		return 0, err
	}
	var total int32
	for _, iv := range intervals {
		total += iv.last - iv.first + 1
	}
	return total, nil
}

// indexInterval is first..last, both included, of an index list.
type indexInterval struct{ first, last int32 }

// parseIndexes parses an index list such as "1,3-5,7": it returns every
// interval that parses, in the list's order, and the first error, an
// interval that does not parse or is not above the one before it.
func parseIndexes(s string, completions int32) ([]indexInterval, error) {
	if s == "" {
		return nil, nil
	}
	var (
		out      []indexInterval
		firstErr error
	)
	last := int32(-1)
	for _, part := range strings.Split(s, ",") {
		first, end, err := parseIndexInterval(part, completions)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if firstErr == nil && last >= first {
			firstErr = fmt.Errorf("non-increasing order, previous: %d, current: %d", last, first)
		}
		out = append(out, indexInterval{first, end})
		last = end
	}
	return out, firstErr
}

// parseIndexInterval parses one interval of an index list, "3" or "3-5",
// into its first and last index.
func parseIndexInterval(interval string, completions int32) (int32, int32, error) {
	bounds := strings.Split(interval, "-")
	if len(bounds) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", interval)
	}
	var ends [2]int32
	for i, b := range bounds {
		v, err := strconv.Atoi(b)
		if err != nil {
			return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", b)
		}
		if v >= int(completions) {
			return 0, 0, fmt.Errorf("too large index: %q", b)
		}
		ends[i] = int32(v)
	}
	if len(bounds) == 1 {
		return ends[0], ends[0], nil
	}
	if ends[0] >= ends[1] {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", ends[0], ends[1])
	}
	return ends[0], ends[1], nil
}

// validateIndexedName refuses an Indexed job whose pods could not be named:
// the controller gives each pod the hostname <job>-<index>.
func validateIndexedName(j *batchv1.Job) field.ErrorList {
	if !isIndexed(&j.Spec) || ptr.Deref(j.Spec.Completions, 0) <= 0 {
		return nil
	}
	host := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
	if len(utilvalidation.IsDNS1123Label(host)) > 0 {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), j.Name,
			fmt.Sprintf("will not able to create pod with invalid DNS label: %s", host))}
	}
	return nil
}

// validateGeneratedSelector checks, on create, that selector generation was
// not defeated by labels the user set: the template must carry the job's
// name and UID and the selector must select on them.
func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	if ptr.Deref(j.Spec.ManualSelector, false) || j.Spec.Selector == nil {
		return nil
	}
	metaPath := field.NewPath("spec", "template", "metadata")
	if j.Spec.Template.Labels == nil {
		return field.ErrorList{field.Required(metaPath.Child("labels"), "")}
	}
	var allErrs field.ErrorList
	if j.UID == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	expected := map[string]string{
		legacyControllerUIDLabel:   string(j.UID),
		legacyJobNameLabel:         j.Name,
		batchv1.ControllerUidLabel: string(j.UID),
		batchv1.JobNameLabel:       j.Name,
	}
	for _, key := range []string{legacyControllerUIDLabel, legacyJobNameLabel, batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		want := expected[key]
		got, ok := j.Spec.Template.Labels[key]
		switch {
		case !ok:
			allErrs = append(allErrs, field.Required(metaPath.Child("labels").Key(key), "must be '"+want+"'"))
		case got != want:
			allErrs = append(allErrs, field.Invalid(metaPath.Child("labels").Key(key), got, "must be '"+want+"'"))
		}
	}
	if selector, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !selector.Matches(labels.Set(expected)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return allErrs
}

func validateSpecUpdate(newJ, oldJ *batchv1.Job, fldPath *field.Path) field.ErrorList {
	spec, old := &newJ.Spec, &oldJ.Spec
	var allErrs field.ErrorList
	immutable := func(n, o interface{}, name string) {
		if !apiequality.Semantic.DeepEqual(n, o) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(name), n, "field is immutable"))
		}
	}
	allErrs = append(allErrs, validateCompletionsUpdate(spec, old, fldPath.Child("completions"))...)
	immutable(spec.Selector, old.Selector, "selector")
	allErrs = append(allErrs, validateTemplateUpdate(newJ, oldJ, fldPath.Child("template"))...)
	immutable(spec.CompletionMode, old.CompletionMode, "completionMode")
	immutable(spec.PodFailurePolicy, old.PodFailurePolicy, "podFailurePolicy")
	immutable(spec.BackoffLimitPerIndex, old.BackoffLimitPerIndex, "backoffLimitPerIndex")
	immutable(spec.ManagedBy, old.ManagedBy, "managedBy")
	immutable(spec.SuccessPolicy, old.SuccessPolicy, "successPolicy")
	// podReplacementPolicy and maxFailedIndexes stay mutable, as upstream.
	return allErrs
}

// validateCompletionsUpdate keeps completions fixed, except that an Indexed
// job may be resized (elastic indexed jobs) when completions and
// parallelism change together.
func validateCompletionsUpdate(spec, old *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	if ptr.Equal(spec.Completions, old.Completions) {
		return nil
	}
	if !isIndexed(spec) {
		return field.ErrorList{field.Invalid(fldPath, spec.Completions, "field is immutable")}
	}
	// A nil completions is already refused for an Indexed job.
	if spec.Completions == nil {
		return nil
	}
	if *spec.Completions != ptr.Deref(spec.Parallelism, 0) {
		return field.ErrorList{field.Invalid(fldPath, spec.Completions,
			fmt.Sprintf("can only be modified in tandem with %s", fldPath.Root().Child("parallelism")))}
	}
	return nil
}

// validateTemplateUpdate keeps the template immutable, except that a job
// which is suspended and has never started may still have its scheduling
// directives changed (upstream allows it so that queueing controllers can
// place a job before letting it run).
func validateTemplateUpdate(newJ, oldJ *batchv1.Job, fldPath *field.Path) field.ErrorList {
	t, old := newJ.Spec.Template.DeepCopy(), &oldJ.Spec.Template
	if ptr.Deref(oldJ.Spec.Suspend, false) && oldJ.Status.StartTime == nil {
		t.Labels, t.Annotations = old.Labels, old.Annotations
		t.Spec.NodeSelector = old.Spec.NodeSelector
		t.Spec.Tolerations = old.Spec.Tolerations
		keepNodeAffinityOf(t, old.Spec.Affinity)
		t.Spec.SchedulingGates = old.Spec.SchedulingGates
	}
	if !apiequality.Semantic.DeepEqual(t, old) {
		return field.ErrorList{field.Invalid(fldPath, newJ.Spec.Template, "field is immutable")}
	}
	return nil
}

// keepNodeAffinityOf gives t (a copy) old's node affinity, so that comparing
// t with old ignores node affinity alone: only where a job's pods may run is
// a scheduling directive; pod (anti-)affinity stays fixed, as upstream.
func keepNodeAffinityOf(t *corev1.PodTemplateSpec, old *corev1.Affinity) {
	var node *corev1.NodeAffinity
	if old != nil {
		node = old.NodeAffinity
	}
	if t.Spec.Affinity == nil {
		t.Spec.Affinity = &corev1.Affinity{}
	}
	t.Spec.Affinity.NodeAffinity = node
	if old == nil && *t.Spec.Affinity == (corev1.Affinity{}) {
		t.Spec.Affinity = nil
	}
}

// isIndexed says whether the Job's pods each get an index.
func isIndexed(spec *batchv1.JobSpec) bool {
	return ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

func hasCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	return conditionIs(conds, t, corev1.ConditionTrue)
}

// conditionIs says whether conds hold a condition of type t with status s.
func conditionIs(conds []batchv1.JobCondition, t batchv1.JobConditionType, s corev1.ConditionStatus) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == s {
			return true
		}
	}
	return false
}
