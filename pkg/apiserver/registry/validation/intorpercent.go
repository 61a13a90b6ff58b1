package validation

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// IntOrPercent checks a count that may also be given as a percentage
// ("25%"): a non-negative integer, or a well-formed percentage.
func IntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch v.Type {
	case intstr.String:
		allErrs = append(allErrs, Messages(fldPath, v, utilvalidation.IsValidPercent(v.StrVal))...)
	case intstr.Int:
		allErrs = append(allErrs, NonnegativeField(int64(v.IntValue()), fldPath)...)
	default:
		allErrs = append(allErrs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%')"))
	}
	return allErrs
}

// NotMoreThan100Percent refuses a percentage above 100%; integers and
// malformed percentages (IntOrPercent reports those) pass.
func NotMoreThan100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if n, ok := Percent(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
	}
	return nil
}

// Percent is the number in a well-formed percentage ("25%" is 25).
func Percent(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(utilvalidation.IsValidPercent(v.StrVal)) > 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, err == nil
}
