package controllerutil

import "k8s.io/apimachinery/pkg/runtime"

// Recorder emits Events about objects (record.EventRecorder is one); they
// are what `kubectl describe` shows under Events.
type Recorder interface {
	Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any)
}

// NopRecorder drops events.
type NopRecorder struct{}

// Eventf does nothing.
func (NopRecorder) Eventf(runtime.Object, string, string, string, ...any) {}
