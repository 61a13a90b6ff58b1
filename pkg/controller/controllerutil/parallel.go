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
