package drain

import (
	"context"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes/scheme"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// drain cordons the nodes, then removes their pods node by node. A node
// that fails is reported and the next one still drained; the command
// fails if any did.
func (o *Options) drain(ctx context.Context) error {
	o.cordonOrUncordon(ctx, true)
	var fatal []error
	var pending []string
	for _, info := range o.nodes {
		if err := o.drainNode(ctx, info.Name); err != nil {
			o.errf("error: unable to drain node %q due to error: %s, continuing command...\n", info.Name, err)
			fatal = append(fatal, err)
			pending = append(pending, info.Name)
			continue
		}
		o.printObj(info.Object, "drained")
	}
	if len(pending) > 0 {
		o.errf("There are pending nodes to be drained:\n")
		for _, n := range pending {
			o.errf(" %s\n", n)
		}
	}
	return utilerrors.NewAggregate(fatal)
}

func (o *Options) filterOptions() filterOptions {
	dsGVR := appsv1.SchemeGroupVersion.WithResource("daemonsets")
	return filterOptions{
		force:                           o.Force,
		ignoreDaemonSets:                o.IgnoreDaemonSets,
		deleteEmptyDirData:              o.DeleteEmptyDirData,
		skipWaitForDeleteTimeoutSeconds: o.SkipWaitForDeleteTimeoutSeconds,
		daemonSet: func(ctx context.Context, ns, name string) error {
			_, err := o.dyn.Resource(dsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			return err
		},
		now: time.Now,
	}
}

// podsOnNode lists the node's pods (through --pod-selector) and the filters'
// verdict on each.
func (o *Options) podsOnNode(ctx context.Context, node string) ([]podDecision, error) {
	opts := &metav1.ListOptions{
		LabelSelector: o.PodSelector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
		Limit:         o.ChunkSize,
	}
	var pods []corev1.Pod
	err := resource.FollowContinue(opts, func(opts metav1.ListOptions) (runtime.Object, error) {
		list := &corev1.PodList{}
		err := o.core.Get().Resource("pods").VersionedParams(&opts, scheme.ParameterCodec).Do(ctx).Into(list)
		if err != nil {
			return nil, resource.EnhanceListError(err, opts, corev1.SchemeGroupVersion.WithResource("pods").String())
		}
		pods = append(pods, list.Items...)
		return list, nil
	})
	if err != nil {
		return nil, err
	}
	return o.filterOptions().decide(ctx, pods), nil
}

func (o *Options) drainNode(ctx context.Context, node string) error {
	decisions, err := o.podsOnNode(ctx, node)
	if err != nil {
		return err
	}
	if errs := refusals(decisions); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	if w := warnings(decisions); w != "" {
		o.mu.Lock()
		printers.NewWarningPrinter(o.streams.ErrOut, printers.WarningPrinterOptions{Color: printers.AllowsColorOutput(o.streams.ErrOut)}).Print(w)
		o.mu.Unlock()
	}
	pods := toRemove(decisions)
	if o.dry == cmdutil.DryRunClient {
		for _, p := range pods {
			o.outf("evicting pod %s/%s (dry run)\n", p.Namespace, p.Name)
		}
		return nil
	}
	if err := o.removePods(ctx, pods); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// Say which pods are still there before giving up on the node.
		if left, lerr := o.podsOnNode(ctx, node); lerr == nil {
			if rest := toRemove(left); len(rest) > 0 {
				o.errf("There are pending pods in node %q when an error occurred: %v\n", node, err)
				for _, p := range rest {
					o.errf("pod/%s\n", p.Name)
				}
			}
		} else {
			o.errf("Following errors occurred while getting the list of pods to delete:\n%s\n", lerr)
		}
		return err
	}
	return nil
}

// globalTimeout is --timeout, or no limit.
func (o *Options) globalTimeout() time.Duration {
	if o.Timeout == 0 {
		return time.Duration(math.MaxInt64)
	}
	return o.Timeout
}

func (o *Options) deleteOptions() *metav1.DeleteOptions {
	opts := &metav1.DeleteOptions{}
	if o.GracePeriodSeconds >= 0 {
		g := int64(o.GracePeriodSeconds)
		opts.GracePeriodSeconds = &g
	}
	if o.dry == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return opts
}

// removePods evicts the pods, or deletes them when eviction is disabled or
// the server has no pods/eviction.
func (o *Options) removePods(ctx context.Context, pods []corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	if !o.DisableEviction {
		ok, err := o.evictionSupported()
		if err != nil {
			return err
		}
		if ok {
			return o.evictPods(ctx, pods)
		}
	}
	return o.deletePods(ctx, pods)
}

// evictionSupported tells whether discovery lists policy/v1 Eviction as
// the pods/eviction subresource.
func (o *Options) evictionSupported() (bool, error) {
	list, err := o.discovery.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == "pods/eviction" && r.Kind == "Eviction" && r.Group == policyv1.GroupName && r.Version == "v1" {
			return true, nil
		}
	}
	return false, nil
}

func (o *Options) getPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	err := o.core.Get().Namespace(ns).Resource("pods").Name(name).Do(ctx).Into(p)
	return p, err
}

func (o *Options) evict(ctx context.Context, p *corev1.Pod) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: o.deleteOptions(),
	}
	return o.core.Post().Namespace(p.Namespace).Resource("pods").Name(p.Name).SubResource("eviction").
		Body(ev).Do(ctx).Error()
}

// evictPods evicts every pod at once, so a pod a disruption budget holds
// does not hold up the others, and waits for each to be gone.
func (o *Options) evictPods(ctx context.Context, pods []corev1.Pod) error {
	timeout := o.globalTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errs := make(chan error, len(pods))
	for _, p := range pods {
		go func() { errs <- o.evictOne(ctx, p, timeout) }()
	}
	var all []error
	for range pods {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	return utilerrors.NewAggregate(all)
}

func (o *Options) evictOne(ctx context.Context, pod corev1.Pod, timeout time.Duration) error {
	active := pod
	for {
		if o.dry == cmdutil.DryRunServer {
			o.outf("evicting pod %s/%s (server dry run)\n", active.Namespace, active.Name)
		} else {
			o.outf("evicting pod %s/%s\n", active.Namespace, active.Name)
		}
		if err := stopped(ctx, &active, timeout); err != nil {
			return err
		}
		err := o.evict(ctx, &active)
		if err == nil {
			break
		}
		terminatingNS := apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsTooManyRequests(err):
			o.errf("error when evicting pods/%q -n %q (will retry after %v): %v\n", active.Name, active.Namespace, o.retryDelay, err)
			sleep(ctx, o.retryDelay)
		case terminatingNS && active.DeletionTimestamp != nil:
			// Already going with its namespace: only wait for it.
		case terminatingNS:
			o.errf("error when evicting pod %q from terminating namespace %q (will retry after %v): %v\n", active.Name, active.Namespace, o.retryDelay, err)
			sleep(ctx, o.retryDelay)
		case ctx.Err() != nil:
			return stopped(ctx, &active, timeout)
		default:
			return fmt.Errorf("error when evicting pods/%q -n %q: %w", active.Name, active.Namespace, err)
		}
		if terminatingNS && active.DeletionTimestamp != nil {
			break
		}
		if fresh, err := o.getPod(ctx, active.Namespace, active.Name); err == nil {
			active = *fresh
		}
	}
	if o.dry == cmdutil.DryRunServer {
		return nil
	}
	if err := o.waitForDelete(ctx, []corev1.Pod{active}, "evicted", "eviction failed"); err != nil {
		return fmt.Errorf("error when waiting for pod %q in namespace %q to terminate: %w", pod.Name, pod.Namespace, err)
	}
	return nil
}

// stopped says why the eviction of p gives up once ctx is done: --timeout,
// or the user interrupted kubectl-lite.
func stopped(ctx context.Context, p *corev1.Pod, timeout time.Duration) error {
	switch ctx.Err() {
	case nil:
		return nil
	case context.DeadlineExceeded:
		return fmt.Errorf("error when evicting pods/%q -n %q: global timeout reached: %v", p.Name, p.Namespace, timeout)
	default:
		return fmt.Errorf("error when evicting pods/%q -n %q: %w", p.Name, p.Namespace, ctx.Err())
	}
}

// sleep waits d, or less when ctx ends first; the loop then reports the
// timeout.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// deletePods deletes the pods, bypassing disruption budgets, then waits
// for them all.
func (o *Options) deletePods(ctx context.Context, pods []corev1.Pod) error {
	for i := range pods {
		err := o.core.Delete().Namespace(pods[i].Namespace).Resource("pods").Name(pods[i].Name).
			Body(o.deleteOptions()).Do(ctx).Error()
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// kubectl waits on a server dry run too, for pods that stay, until
	// --timeout; there is nothing to wait for.
	if o.dry == cmdutil.DryRunServer {
		for i := range pods {
			o.printObj(&pods[i], "deleted")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.globalTimeout())
	defer cancel()
	return o.waitForDelete(ctx, pods, "deleted", "deletion failed")
}

// waitForDelete polls each second until every pod is gone (or replaced by
// one of the same name), printing "pod/x <done>" for each, or until a pod
// has been terminating past --skip-wait-for-delete-timeout.
func (o *Options) waitForDelete(ctx context.Context, pods []corev1.Pod, done, failed string) error {
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		var waiting []corev1.Pod
		for i := range pods {
			pod := &pods[i]
			p, err := o.getPod(ctx, pod.Namespace, pod.Name)
			switch {
			case apierrors.IsNotFound(err) || (err == nil && p.UID != pod.UID):
				o.printObj(pod, done)
				continue
			case err != nil:
				if ctx.Err() != nil {
					// Past the deadline, the rate limiter's own error
					// would hide that it is the timeout.
					return false, ctx.Err()
				}
				o.printObj(pod, failed)
				return false, err
			case deletedLongAgo(p, o.SkipWaitForDeleteTimeoutSeconds, time.Now()):
				o.outf("pod %q has DeletionTimestamp older than %v seconds, skipping\n", pod.Name, o.SkipWaitForDeleteTimeoutSeconds)
				continue
			}
			waiting = append(waiting, *pod)
		}
		pods = waiting
		return len(pods) == 0, nil
	})
}
