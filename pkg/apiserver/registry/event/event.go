// Package event holds the core/v1 Event strategy: namespace agreement with
// the involved object, the involvedObject.* field selectors and the table.
package event

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/registry"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/tableutil"
	"github.com/kube-lite/kube-lite/pkg/apiserver/registry/validation"
)

// Resource describes events; c is the clock the LAST SEEN column reads.
func Resource(c clock.PassiveClock) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "events",
		Singular:     "event",
		Kind:         "Event",
		Namespaced:   true,
		ShortNames:   []string{"ev"},
		New:          func() runtime.Object { return &corev1.Event{} },
		NewList:      func() runtime.Object { return &corev1.EventList{} },
		Strategy:     strategy{},
		// As upstream: a PUT of a missing object creates it.
		AllowCreateOnUpdate: true,
		Table:               table(c),
		Attrs:               Attrs,
	}
}

// Attrs exposes the involved object, reason, source and type to field
// selectors (kubectl describe finds a pod's events by involvedObject.*).
func Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil, nil, fmt.Errorf("not an event: %T", obj)
	}
	io := e.InvolvedObject
	return labels.Set(e.Labels), fields.Set{
		"metadata.name":                  e.Name,
		"metadata.namespace":             e.Namespace,
		"involvedObject.kind":            io.Kind,
		"involvedObject.namespace":       io.Namespace,
		"involvedObject.name":            io.Name,
		"involvedObject.uid":             string(io.UID),
		"involvedObject.apiVersion":      io.APIVersion,
		"involvedObject.resourceVersion": io.ResourceVersion,
		"involvedObject.fieldPath":       io.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}, nil
}

type strategy struct{}

func (strategy) Default(runtime.Object)                                           {}
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return registry.WrongType("event", obj)
	}
	return Validate(e)
}

func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return registry.WrongType("event", obj)
	}
	return Validate(e)
}

// Limits on the fields of events that carry an eventTime (written by the
// events.k8s.io style recorders).
const (
	reportingInstanceLimit = 128
	actionLimit            = 128
	reasonLimit            = 128
	noteLimit              = 1024
)

// Validate applies upstream's rules for events written through core/v1:
// the event lives in its involved object's namespace (cluster-scoped
// objects' events in default), and events that carry an eventTime also name
// their reporter, action and reason. The type is free text in core/v1.
func Validate(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
		}
		errs = append(errs, validation.Messages(field.NewPath("reportingController"), e.ReportingController, utilvalidation.IsQualifiedName(e.ReportingController))...)
		errs = append(errs, requiredWithin(e.ReportingInstance, reportingInstanceLimit, field.NewPath("reportingInstance"))...)
		errs = append(errs, requiredWithin(e.Action, actionLimit, field.NewPath("action"))...)
		errs = append(errs, requiredWithin(e.Reason, reasonLimit, field.NewPath("reason"))...)
		if len(e.Message) > noteLimit {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLimit)))
		}
	}
	errs = append(errs, validation.Messages(field.NewPath("namespace"), e.Namespace, utilvalidation.IsDNS1123Subdomain(e.Namespace))...)
	return errs
}

func requiredWithin(v string, limit int, fldPath *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if len(v) > limit {
		return field.ErrorList{field.Invalid(fldPath, "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}

// table has upstream's event columns; unlike other tables NAME comes last
// and only with -o wide.
func table(c clock.PassiveClock) registry.TableConvertor {
	docs := corev1.Event{}.SwaggerDoc()
	name := tableutil.NameColumn()
	name.Priority = 1
	cols := []metav1.TableColumnDefinition{
		tableutil.Column("Last Seen", "string", 0, docs["lastTimestamp"]),
		tableutil.Column("Type", "string", 0, docs["type"]),
		tableutil.Column("Reason", "string", 0, docs["reason"]),
		tableutil.Column("Object", "string", 0, docs["involvedObject"]),
		tableutil.Column("Subobject", "string", 1, corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
		tableutil.Column("Source", "string", 1, docs["source"]),
		tableutil.Column("Message", "string", 0, docs["message"]),
		tableutil.Column("First Seen", "string", 1, docs["firstTimestamp"]),
		tableutil.Column("Count", "string", 1, docs["count"]),
		name,
	}
	return tableutil.New(cols, func(e *corev1.Event) []interface{} {
		now := c.Now()
		first := tableutil.Age(e.FirstTimestamp, now)
		if e.FirstTimestamp.IsZero() {
			first = microAge(e.EventTime, now)
		}
		last := tableutil.Age(e.LastTimestamp, now)
		if e.LastTimestamp.IsZero() {
			last = first
		}
		count := e.Count
		if e.Series != nil {
			last = microAge(e.Series.LastObservedTime, now)
			count = e.Series.Count
		} else if count == 0 {
			// Events of the events.k8s.io API happen once unless they have a series.
			count = 1
		}
		target := strings.ToLower(e.InvolvedObject.Kind)
		if e.InvolvedObject.Name != "" {
			target += "/" + e.InvolvedObject.Name
		}
		return []interface{}{
			last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath,
			source(e), strings.TrimSpace(e.Message), first, int64(count), e.Name,
		}
	})
}

func microAge(t metav1.MicroTime, now time.Time) string {
	return tableutil.Age(metav1.NewTime(t.Time), now)
}

// source is "component, host", from the old source fields or the newer
// reporting ones.
func source(e *corev1.Event) string {
	component, instance := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if instance == "" {
		instance = e.ReportingInstance
	}
	if instance == "" {
		return component
	}
	return component + ", " + instance
}
