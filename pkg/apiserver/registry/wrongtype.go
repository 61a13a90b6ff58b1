package registry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// WrongType is what a strategy returns when it is handed an object of
// another type than its resource's. The handler never does that, so it is a
// wiring bug: an internal error naming the strategy, not the user's mistake.
func WrongType(strategy string, obj runtime.Object) field.ErrorList {
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("%s strategy: unexpected object %T", strategy, obj))}
}
