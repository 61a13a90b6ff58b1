package job

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// indexed makes the job Indexed with the given completions.
func indexed(completions int32) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To(completions)
	}
}

// withRules sets a pod failure policy made of rules.
func withRules(rules ...batchv1.PodFailurePolicyRule) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules} }
}

func exitCodes(op batchv1.PodFailurePolicyOnExitCodesOperator, values ...int32) *batchv1.PodFailurePolicyOnExitCodesRequirement {
	return &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: values}
}

func onConditions(n int) []batchv1.PodFailurePolicyOnPodConditionsPattern {
	out := make([]batchv1.PodFailurePolicyOnPodConditionsPattern, n)
	for i := range out {
		out[i] = batchv1.PodFailurePolicyOnPodConditionsPattern{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}
	}
	return out
}

func withSuccessRules(rules ...batchv1.SuccessPolicyRule) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: rules} }
}

// TestValidatePoliciesAsUpstream checks the words of the errors a user sees
// (kubectl prints them after "The Job "pi" is invalid:") for the failure,
// success and per-index policies.
func TestValidatePoliciesAsUpstream(t *testing.T) {
	countExit := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 1)}
	tests := []struct {
		name   string
		mutate []func(*batchv1.Job)
		want   []string // the errors' texts, in order
	}{
		{name: "valid failure policy", mutate: []func(*batchv1.Job){withRules(countExit,
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: onConditions(1)})}},
		{name: "failure policy with OnFailure", mutate: []func(*batchv1.Job){withRules(countExit), func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}}, want: []string{`spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`}},
		{name: "restartPolicy unset", mutate: []func(*batchv1.Job){func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" }},
			want: []string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		{name: "empty and unknown actions", mutate: []func(*batchv1.Job){withRules(
			batchv1.PodFailurePolicyRule{OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 1)},
			batchv1.PodFailurePolicyRule{Action: "Retry", OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 1)},
		)}, want: []string{
			`spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]`,
			`spec.podFailurePolicy.rules[1].action: Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"`,
		}},
		{name: "FailIndex without backoffLimitPerIndex", mutate: []func(*batchv1.Job){indexed(3), withRules(
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 1)})},
			want: []string{`spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`}},
		{name: "FailIndex with backoffLimitPerIndex", mutate: []func(*batchv1.Job){indexed(3), func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) },
			withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 1)})}},
		{name: "both and neither requirement", mutate: []func(*batchv1.Job){withRules(
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 1), OnPodConditions: onConditions(1)},
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore},
		)}, want: []string{
			`spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported`,
			`spec.podFailurePolicy.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required`,
		}},
		{name: "exit codes empty, unordered, duplicate, zero with In", mutate: []func(*batchv1.Job){withRules(
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpNotIn, []int32{}...)},
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 0, 5, 2, 2)},
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: exitCodes("Maybe", 1)},
		)}, want: []string{
			`spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []: at least one value is required`,
			`spec.podFailurePolicy.rules[1].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator`,
			`spec.podFailurePolicy.rules[1].onExitCodes.values[3]: Duplicate value: 2`,
			`spec.podFailurePolicy.rules[1].onExitCodes.values: Invalid value: [0,5,2,2]: must be ordered`,
			`spec.podFailurePolicy.rules[2].onExitCodes.operator: Unsupported value: "Maybe": supported values: "In", "NotIn"`,
		}},
		{name: "container not in template", mutate: []func(*batchv1.Job){withRules(batchv1.PodFailurePolicyRule{
			Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}})},
			want: []string{`spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "main": must be one of the container or initContainer names in the pod template`}},
		{name: "too many rules and patterns", mutate: []func(*batchv1.Job){func(j *batchv1.Job) {
			rules := make([]batchv1.PodFailurePolicyRule, 21)
			for i := range rules {
				rules[i] = countExit
			}
			rules[0] = batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: onConditions(21)}
			withRules(rules...)(j)
		}}, want: []string{
			`spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items`,
			`spec.podFailurePolicy.rules[0].onPodConditions: Too many: 21: must have at most 20 items`,
		}},
		{name: "bad pod condition pattern", mutate: []func(*batchv1.Job){withRules(batchv1.PodFailurePolicyRule{
			Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
				{Type: "Not A Type", Status: "Maybe"}}})},
			want: []string{
				`spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "Not A Type": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"`,
			}},
		{name: "success policy on a NonIndexed job", mutate: []func(*batchv1.Job){withSuccessRules(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](1)})},
			want: []string{`spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode`}},
		{name: "valid success policy", mutate: []func(*batchv1.Job){indexed(10), withSuccessRules(
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2-4,9"), SucceededCount: ptr.To[int32](5)})}},
		{name: "success policy without rules", mutate: []func(*batchv1.Job){indexed(3), withSuccessRules()},
			want: []string{`spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified`}},
		{name: "success rules malformed", mutate: []func(*batchv1.Job){indexed(5), withSuccessRules(
			batchv1.SuccessPolicyRule{},
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("1-2-3")},
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("x")},
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("7")},
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("3,1")},
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("2-2")},
		)}, want: []string{
			`spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified`,
			`spec.successPolicy.rules[1].succeededIndexes: Invalid value: "1-2-3": error parsing succeededIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'`,
			`spec.successPolicy.rules[2].succeededIndexes: Invalid value: "x": error parsing succeededIndexes: cannot convert string to integer for index: "x"`,
			`spec.successPolicy.rules[3].succeededIndexes: Invalid value: "7": error parsing succeededIndexes: too large index: "7"`,
			`spec.successPolicy.rules[4].succeededIndexes: Invalid value: "3,1": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1`,
			`spec.successPolicy.rules[5].succeededIndexes: Invalid value: "2-2": error parsing succeededIndexes: non-increasing order, previous: 2, current: 2`,
		}},
		{name: "succeededCount too large", mutate: []func(*batchv1.Job){indexed(5), withSuccessRules(
			batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](6)},
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-1"), SucceededCount: ptr.To[int32](3)},
		)}, want: []string{
			`spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)`,
			`spec.successPolicy.rules[1].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)`,
		}},
		{name: "maxFailedIndexes above completions", mutate: []func(*batchv1.Job){indexed(3), func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			j.Spec.MaxFailedIndexes = ptr.To[int32](4)
		}}, want: []string{`spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions`}},
		{name: "maxFailedIndexes without backoffLimitPerIndex", mutate: []func(*batchv1.Job){indexed(3), func(j *batchv1.Job) {
			j.Spec.MaxFailedIndexes = ptr.To[int32](1)
		}}, want: []string{`spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified`}},
		{name: "per-index limits on a NonIndexed job", mutate: []func(*batchv1.Job){func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			j.Spec.MaxFailedIndexes = ptr.To[int32](1)
		}}, want: []string{
			`spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode`,
			`spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode`,
		}},
		{name: "indexed pods need DNS-label hostnames", mutate: []func(*batchv1.Job){indexed(10), func(j *batchv1.Job) {
			j.Name = "pi.v1"
		}}, want: []string{`metadata.name: Invalid value: "pi.v1": will not able to create pod with invalid DNS label: pi.v1-9`}},
		{name: "managedBy not a domain-prefixed path", mutate: []func(*batchv1.Job){func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("kueue") }},
			want: []string{`spec.managedBy: Invalid value: "kueue": must be a domain-prefixed path (such as "acme.io/foo")`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(tt.mutate...)
			r := resource()
			r.Strategy.PrepareForCreate(context.Background(), j)
			assertErrors(t, r.Strategy.Validate(context.Background(), j), tt.want)
		})
	}
}

// TestUpdatePoliciesAsUpstream checks which of the newer fields an update
// may change: upstream keeps the failure and success policies and
// backoffLimitPerIndex fixed, lets podReplacementPolicy and
// maxFailedIndexes change, and lets an Indexed job be resized when
// completions and parallelism change together.
func TestUpdatePoliciesAsUpstream(t *testing.T) {
	stored := created(t, newJob(indexed(4), func(j *batchv1.Job) {
		j.Spec.Parallelism = ptr.To[int32](4)
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		j.Spec.MaxFailedIndexes = ptr.To[int32](2)
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](2)}}}
	}))
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{name: "podReplacementPolicy", mutate: func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }},
		{name: "maxFailedIndexes", mutate: func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](3) }},
		{name: "resize in tandem", mutate: func(j *batchv1.Job) {
			j.Spec.Completions = ptr.To[int32](6)
			j.Spec.Parallelism = ptr.To[int32](6)
		}},
		{name: "resize completions alone", mutate: func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](3) },
			want: []string{`spec.completions: Invalid value: 3: can only be modified in tandem with spec.parallelism`}},
		{name: "backoffLimitPerIndex", mutate: func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](2) },
			want: []string{`spec.backoffLimitPerIndex: Invalid value: 2: field is immutable`}},
		{name: "successPolicy", mutate: func(j *batchv1.Job) { j.Spec.SuccessPolicy.Rules[0].SucceededCount = ptr.To[int32](3) },
			want: []string{`spec.successPolicy: Invalid value: {"rules":[{"succeededCount":3}]}: field is immutable`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resource()
			obj := stored.DeepCopy()
			tt.mutate(obj)
			r.Strategy.PrepareForUpdate(context.Background(), obj, stored)
			assertErrors(t, r.Strategy.ValidateUpdate(context.Background(), obj, stored), tt.want)
		})
	}
}

func assertErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSchedulingDirectivesOfSuspendedJob: a suspended job that never
// started may change where its pods run (node selector, tolerations, node
// affinity, labels), not how they place against other pods.
func TestSchedulingDirectivesOfSuspendedJob(t *testing.T) {
	nodeAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}
	podAffinity := &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}
	stored := created(t, newJob(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }))
	withNode := stored.DeepCopy()
	withNode.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
	tests := []struct {
		name   string
		old    *batchv1.Job
		mutate func(*batchv1.Job)
		want   []string
	}{
		{name: "add node affinity", old: stored, mutate: func(j *batchv1.Job) {
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
		}},
		{name: "clear node affinity", old: withNode, mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.Affinity = nil }},
		{name: "add pod affinity", old: stored, mutate: func(j *batchv1.Job) {
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAffinity: podAffinity}
		}, want: []string{"spec.template"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resource()
			obj := tt.old.DeepCopy()
			tt.mutate(obj)
			r.Strategy.PrepareForUpdate(context.Background(), obj, tt.old)
			assertFields(t, r.Strategy.ValidateUpdate(context.Background(), obj, tt.old), tt.want)
		})
	}
}
