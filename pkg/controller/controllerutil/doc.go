// Package controllerutil holds what the controllers share: named
// rate-limited work queues with per-controller Prometheus metrics, the
// worker loop, expectations of the controller's own writes, adoption and
// release of objects by selector and ownerReferences, and pod state helpers.
package controllerutil
