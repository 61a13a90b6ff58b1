// Package logs holds `logs`: container logs, proxied by the apiserver
// from the pod's kubelet, of one pod, of a workload's pod, or of every pod
// a label selector picks.
package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/kubectl/pkg/scheme"
	"k8s.io/kubectl/pkg/util"
)

const (
	usage   = "logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]"
	seeHelp = "See 'kubectl-lite logs -h' for help and examples"
)

// selectorTail is how many lines each pod shows when a selector picks the
// pods and --tail is not given: many pods' whole logs would drown the
// terminal.
const selectorTail int64 = 10

// Options are logs' flags.
type Options struct {
	Follow        bool
	Container     string
	Previous      bool
	Tail          int64
	Timestamps    bool
	SinceTime     string
	Since         time.Duration
	LimitBytes    int64
	Selector      string
	AllContainers bool
	AllPods       bool
	Prefix        bool
	IgnoreErrors  bool
	MaxFollow     int
	SkipTLSVerify bool
	PodTimeout    time.Duration

	tailSet bool
	// retryEvery is how often -f asks again for a stream the apiserver
	// refused (a container not started yet); tests shorten it.
	retryEvery time.Duration
	streams    genericiooptions.IOStreams
}

// NewCmd returns `logs`.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{streams: streams, retryEvery: time.Second}
	cmd := &cobra.Command{
		Use:   usage,
		Short: "Print the logs of a container in a pod",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.tailSet = cmd.Flags().Changed("tail")
			return o.Run(cmd.Context(), f, args, cmd.Flags().Changed("container"))
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.Follow, "follow", "f", false, "Stream the logs")
	fl.StringVarP(&o.Container, "container", "c", "", "Print the logs of this container")
	fl.BoolVarP(&o.Previous, "previous", "p", false, "Print the logs of the previous instance of the container")
	fl.Int64Var(&o.Tail, "tail", -1, "Lines of recent log to display; -1 shows all, or 10 per pod with a selector")
	fl.BoolVar(&o.Timestamps, "timestamps", false, "Prefix each line with its RFC3339 timestamp")
	fl.DurationVar(&o.Since, "since", 0, "Only logs newer than this duration; only one of --since and --since-time")
	fl.StringVar(&o.SinceTime, "since-time", "", "Only logs after this RFC3339 time; only one of --since and --since-time")
	fl.Int64Var(&o.LimitBytes, "limit-bytes", 0, "Maximum bytes of logs to return")
	fl.StringVarP(&o.Selector, "selector", "l", "", "Label selector: the logs of every matching pod")
	fl.BoolVar(&o.AllContainers, "all-containers", false, "The logs of every container of the pod(s)")
	fl.BoolVar(&o.AllPods, "all-pods", false, "The logs of every pod of the workload; implies --prefix")
	fl.BoolVar(&o.Prefix, "prefix", false, "Prefix each line with its source: [pod/NAME/CONTAINER]")
	fl.BoolVar(&o.IgnoreErrors, "ignore-errors", false, "When following, report a stream's error and go on with the others")
	fl.IntVar(&o.MaxFollow, "max-log-requests", 5, "How many logs -f follows at once with a selector")
	fl.BoolVar(&o.SkipTLSVerify, "insecure-skip-tls-verify-backend", false, "Do not verify the kubelet's serving certificate")
	fl.DurationVar(&o.PodTimeout, "pod-running-timeout", 20*time.Second, "How long to wait for a workload's pod to run")
	return cmd
}

// PodLogOptions maps the flags to the API's options.
func (o *Options) PodLogOptions() (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{
		Container:                    o.Container,
		Follow:                       o.Follow,
		Previous:                     o.Previous,
		Timestamps:                   o.Timestamps,
		InsecureSkipTLSVerifyBackend: o.SkipTLSVerify,
	}
	if o.SinceTime != "" {
		t, err := util.ParseRFC3339(o.SinceTime, metav1.Now)
		if err != nil {
			return nil, err
		}
		opts.SinceTime = &t
	}
	switch {
	case o.Tail != -1:
		opts.TailLines = &o.Tail
	case o.Selector != "" && !o.tailSet:
		tail := selectorTail
		opts.TailLines = &tail
	}
	if o.Since != 0 {
		s := int64(o.Since.Round(time.Second).Seconds())
		opts.SinceSeconds = &s
	}
	if o.LimitBytes != 0 {
		opts.LimitBytes = &o.LimitBytes
	}
	return opts, nil
}

// checkArgs refuses what kubectl refuses before it looks the pod up.
func (o *Options) checkArgs(args []string) error {
	switch {
	case len(args) == 0 && o.Selector == "", len(args) > 2:
		return fmt.Errorf("expected '%s'.\nPOD or TYPE/NAME is a required argument for the logs command\n%s", usage, seeHelp)
	case len(args) == 1 && o.Selector != "":
		return fmt.Errorf("only a selector (-l) or a POD name is allowed\n%s", seeHelp)
	case o.PodTimeout <= 0:
		return fmt.Errorf("--pod-running-timeout must be higher than zero")
	}
	return nil
}

// validate refuses what kubectl refuses once the pod is found, so that a
// missing pod is reported first, as kubectl reports it.
func (o *Options) validate(args []string, containerFlag bool, opts *corev1.PodLogOptions) error {
	switch {
	case o.SinceTime != "" && o.Since != 0:
		return fmt.Errorf("at most one of `sinceTime` or `sinceSeconds` may be specified")
	case o.AllContainers && opts.Container != "":
		return fmt.Errorf("--all-containers=true should not be specified with container name %s", opts.Container)
	case containerFlag && len(args) == 2:
		return fmt.Errorf("only one of -c or an inline [CONTAINER] arg is allowed")
	case o.LimitBytes < 0:
		return fmt.Errorf("--limit-bytes must be greater than 0")
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 0:
		return fmt.Errorf("--since must be greater than 0")
	case opts.TailLines != nil && *opts.TailLines < -1:
		return fmt.Errorf("--tail must be greater than or equal to -1")
	}
	return nil
}

// Run prints (or follows) the logs of the pod, of a pod of the workload,
// or of every pod the selector picks.
func (o *Options) Run(ctx context.Context, f cmdutil.Factory, args []string, containerFlag bool) error {
	if err := o.checkArgs(args); err != nil {
		return err
	}
	if len(args) == 2 {
		o.Container = args[1]
	}
	if o.AllPods {
		o.Prefix = true
	}
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	opts, err := o.PodLogOptions()
	if err != nil {
		return err
	}
	b := f.NewBuilder().
		WithScheme(scheme.Scheme, scheme.Scheme.PrioritizedVersionsAllGroups()...).
		NamespaceParam(ns).DefaultNamespace().
		SingleResourceType()
	if len(args) > 0 {
		b = b.ResourceNames("pods", args[0])
	} else {
		b = b.ResourceTypes("pods").LabelSelectorParam(o.Selector)
	}
	infos, err := b.Do().Infos()
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("error from server (NotFound): %w in namespace %q", err, ns)
		}
		return err
	}
	if len(infos) != 1 {
		return errors.New("expected a resource")
	}
	if err := o.validate(args, containerFlag, opts); err != nil {
		return err
	}
	obj := infos[0].Object
	if list, ok := obj.(*corev1.PodList); ok && len(list.Items) == 0 {
		fmt.Fprintf(o.streams.ErrOut, "No resources found in %s namespace.\n", ns)
	}
	var requests map[corev1.ObjectReference]rest.ResponseWrapper
	if o.AllPods {
		requests, err = polymorphichelpers.AllPodLogsForObjectFn(f, obj, opts, o.PodTimeout, o.AllContainers)
	} else {
		requests, err = polymorphichelpers.LogsForObjectFn(f, obj, opts, o.PodTimeout, o.AllContainers)
	}
	if err != nil {
		return err
	}
	refs := ordered(requests, obj)
	if o.Follow && len(refs) > 1 {
		if len(refs) > o.MaxFollow {
			return fmt.Errorf("you are attempting to follow %d log streams, but maximum allowed concurrency is %d, use --max-log-requests to increase the limit", len(refs), o.MaxFollow)
		}
		return o.parallel(ctx, refs, requests)
	}
	for _, ref := range refs {
		if err := o.consume(ctx, ref, requests[ref], o.streams.Out, o.streams.ErrOut); err != nil {
			return err
		}
	}
	return nil
}

// parallel follows every stream at once; lines are written whole, so
// streams interleave only between lines.
func (o *Options) parallel(ctx context.Context, refs []corev1.ObjectReference, requests map[corev1.ObjectReference]rest.ResponseWrapper) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &lockedWriter{w: o.streams.Out}
	errOut := &lockedWriter{w: o.streams.ErrOut}
	errs := make(chan error, len(refs))
	var wg sync.WaitGroup
	for _, ref := range refs {
		wg.Add(1)
		go func(ref corev1.ObjectReference) {
			defer wg.Done()
			if err := o.consume(ctx, ref, requests[ref], out, errOut); err != nil {
				errs <- err
				cancel()
			}
		}(ref)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// consume copies the stream of ref to out, prefixed as --prefix asks.
// With --ignore-errors a failed stream is reported and the others go on;
// kubectl reports it on out, among the logs, unprefixed. With -f, a stream the apiserver refuses (the container
// has not started yet, the pod is not scheduled yet) is asked for again
// every second, each refusal shown, until it starts or
// --pod-running-timeout runs out.
func (o *Options) consume(ctx context.Context, ref corev1.ObjectReference, req rest.ResponseWrapper, out, errOut io.Writer) error {
	logOut := o.withPrefix(ref, out)
	// once copies the stream; done says it needs no retry: it ended, was
	// stopped (by the user or by another stream's failure), or its failure
	// is ignored.
	once := func() (done bool, err error) {
		err = copyStream(ctx, req, logOut)
		switch {
		case err == nil, ctx.Err() != nil:
			return true, nil
		case o.IgnoreErrors:
			fmt.Fprintf(out, "error: %v\n", err)
			return true, nil
		}
		return false, err
	}
	if !o.Follow {
		_, err := once()
		return err
	}
	// The stream itself runs under ctx, not under the poll's deadline:
	// --pod-running-timeout bounds the wait for it to start, not how long
	// it is followed.
	err := wait.PollUntilContextTimeout(ctx, o.retryEvery, o.PodTimeout, true, func(context.Context) (bool, error) {
		done, err := once()
		if done {
			return true, nil
		}
		fmt.Fprintln(errOut, err.Error())
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return false, nil
		}
		return false, err
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// copyStream copies one stream to out. A writer that prefixes lines or is
// shared by concurrent streams gets whole lines, one Write each; any other
// gets the stream as it comes, without splitting it into lines.
func copyStream(ctx context.Context, req rest.ResponseWrapper, out io.Writer) error {
	rc, err := req.Stream(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	switch out.(type) {
	case *prefixWriter, *lockedWriter:
		return copyLines(bufio.NewReader(rc), out)
	}
	_, err = io.Copy(out, rc)
	return err
}

func copyLines(r *bufio.Reader, out io.Writer) error {
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if _, werr := out.Write(line); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

var containerInFieldPath = regexp.MustCompile(`spec\.(initContainers|containers|ephemeralContainers)\{(.+)\}`)

// containerOf is the container a log stream's reference names in its
// field path, or "".
func containerOf(ref corev1.ObjectReference) string {
	if m := containerInFieldPath.FindStringSubmatch(ref.FieldPath); m != nil {
		return m[2]
	}
	return ""
}

func (o *Options) withPrefix(ref corev1.ObjectReference, w io.Writer) io.Writer {
	if !o.Prefix || ref.FieldPath == "" || ref.Name == "" {
		return w
	}
	return &prefixWriter{prefix: []byte(fmt.Sprintf("[pod/%s/%s] ", ref.Name, containerOf(ref))), w: w}
}

// ordered lists the streams pod by pod (in the listed order), and within
// a pod its init containers, containers and ephemeral containers in spec
// order, so that the output reads the same on every run.
func ordered(requests map[corev1.ObjectReference]rest.ResponseWrapper, obj runtime.Object) []corev1.ObjectReference {
	podRank := map[string]int{}
	containerRank := map[string]int{}
	add := func(p *corev1.Pod) {
		podRank[p.Name] = len(podRank)
		i := 0
		for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range cs {
				containerRank[p.Name+"/"+c.Name] = i
				i++
			}
		}
		for _, c := range p.Spec.EphemeralContainers {
			containerRank[p.Name+"/"+c.Name] = i
			i++
		}
	}
	switch t := obj.(type) {
	case *corev1.Pod:
		add(t)
	case *corev1.PodList:
		for i := range t.Items {
			add(&t.Items[i])
		}
	}
	// Each stream's sort key, computed once rather than per comparison.
	type keyed struct {
		ref       corev1.ObjectReference
		pod, cont int
	}
	keys := make([]keyed, 0, len(requests))
	for ref := range requests {
		k := keyed{ref: ref, pod: len(podRank), cont: len(containerRank)}
		if p, ok := podRank[ref.Name]; ok {
			k.pod = p
		}
		if c, ok := containerRank[ref.Name+"/"+containerOf(ref)]; ok {
			k.cont = c
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		switch {
		case a.pod != b.pod:
			return a.pod < b.pod
		case a.ref.Name != b.ref.Name:
			return a.ref.Name < b.ref.Name
		case a.cont != b.cont:
			return a.cont < b.cont
		}
		return strings.Compare(a.ref.FieldPath, b.ref.FieldPath) < 0
	})
	refs := make([]corev1.ObjectReference, len(keys))
	for i, k := range keys {
		refs[i] = k.ref
	}
	return refs
}

// prefixWriter serves one stream: its buffer is reused for every line.
type prefixWriter struct {
	prefix []byte
	w      io.Writer
	buf    []byte
}

// Write writes the prefix and one line in a single call, so concurrent
// streams never split a line.
func (p *prefixWriter) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.buf = append(append(p.buf[:0], p.prefix...), b...)
	n, err := p.w.Write(p.buf)
	n -= len(p.prefix)
	if n < 0 {
		n = 0
	}
	return n, err
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
