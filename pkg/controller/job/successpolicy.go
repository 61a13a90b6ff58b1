package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
)

// matchSuccessPolicy says whether an Indexed Job's succeeded indexes meet
// one of spec.successPolicy's rules, the first that does giving the
// SuccessCriteriaMet message upstream writes.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int, done map[int]bool) (string, bool) {
	if policy == nil || len(done) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		var met bool
		switch {
		case rule.SucceededIndexes != nil:
			required := parseIndexes(*rule.SucceededIndexes, completions)
			if len(required) == 0 {
				// Nothing it could name parses: upstream skips the rule.
				continue
			}
			n := 0
			for ix := range required {
				if done[ix] {
					n++
				}
			}
			met = n == len(required) || (rule.SucceededCount != nil && n >= int(*rule.SucceededCount))
		case rule.SucceededCount != nil:
			met = len(done) >= int(*rule.SucceededCount)
		}
		if met {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
