//go:build invariants || race

package lockrank

import (
	"runtime"
	"sync"
	"testing"
)

// The fast goroutine id is the one runtime.Stack reports, on every
// goroutine, including ones started after calibration.
func TestGoidMatchesRuntimeStack(t *testing.T) {
	if a := runtime.GOARCH; (a == "amd64" || a == "arm64") && goidOffset < 0 {
		t.Fatalf("calibration found no goroutine id in the runtime's g on %s", a)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if fast, slow := goid(), slowGoid(); fast != slow {
				errs <- "mismatch"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if goid() != slowGoid() {
		t.Fatal("mismatch on the test goroutine")
	}
}
