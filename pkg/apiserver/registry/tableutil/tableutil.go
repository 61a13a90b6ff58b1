// Package tableutil holds what the per-resource table convertors share: the
// Name and Age columns, age formatting as kubectl shows it, and a typed
// adapter from a row function to registry.TableConvertor.
package tableutil

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
)

// Unknown is what upstream prints for a missing timestamp.
const Unknown = "<unknown>"

// None is what upstream prints for an empty list or selector.
const None = "<none>"

// NameColumn is the first column of every table.
func NameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
}

// AgeColumn shows how long ago the object was created.
func AgeColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
}

// Column is a shorthand for a column definition; priority 1 shows only with
// -o wide.
func Column(name, typ string, priority int32, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Priority: priority, Description: description}
}

// Age renders the time since t the way kubectl does (5s, 3m2s, 4h, 12d);
// a zero t is "<unknown>".
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return Unknown
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// ContainersAndImages joins container names and images for the wide
// CONTAINERS and IMAGES columns of workloads.
func ContainersAndImages(containers []corev1.Container) (names, images string) {
	n := make([]string, 0, len(containers))
	im := make([]string, 0, len(containers))
	for _, c := range containers {
		n = append(n, c.Name)
		im = append(im, c.Image)
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// Convertor adapts a typed row function to registry.TableConvertor.
type Convertor[T runtime.Object] struct {
	Cols []metav1.TableColumnDefinition
	Row  func(obj T) []interface{}
}

// New returns a table convertor whose rows come from row.
func New[T runtime.Object](cols []metav1.TableColumnDefinition, row func(obj T) []interface{}) registry.TableConvertor {
	return &Convertor[T]{Cols: cols, Row: row}
}

// Columns returns the column definitions.
func (c *Convertor[T]) Columns() []metav1.TableColumnDefinition { return c.Cols }

// Cells returns one row, or an error when obj is not a T.
func (c *Convertor[T]) Cells(obj runtime.Object) ([]interface{}, error) {
	t, ok := obj.(T)
	if !ok {
		var want T
		return nil, fmt.Errorf("table: want %T, got %T", want, obj)
	}
	return c.Row(t), nil
}
