package controllerutil

import "sync"

// Parallel runs call(0) to call(n-1) at once and waits for all of them; it
// returns how many failed and the first error received, so that callers can
// stop expecting the objects that will never show up.
func Parallel(n int, call func(i int) error) (failed int, first error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		failed++
		if first == nil {
			first = err
		}
	}
	return failed, first
}

// SlowStart runs call(0) to call(n-1) in parallel batches of 1, 2, 4, ...
// and stops after the first batch with a failure, as upstream's
// controllers create pods: a quota or admission refusal then costs a
// handful of calls and FailedCreate events instead of one per pod. It
// returns how many calls succeeded and the first error.
func SlowStart(n int, call func(i int) error) (succeeded int, first error) {
	next := 0
	for batch := 1; next < n; batch *= 2 {
		batch = min(batch, n-next)
		start := next
		failed, err := Parallel(batch, func(i int) error { return call(start + i) })
		succeeded += batch - failed
		next += batch
		if err != nil {
			return succeeded, err
		}
	}
	return succeeded, nil
}
