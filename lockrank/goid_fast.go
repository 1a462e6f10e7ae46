//go:build (invariants || race) && (amd64 || arm64)

package lockrank

import (
	"sync"
	"unsafe"
)

// getg returns the running goroutine's runtime g (goid_asm_*.s).
func getg() unsafe.Pointer

// goidOffset is where the goroutine id sits in the runtime's g, found by
// calibrate; -1 when it could not be found (goid then parses runtime.Stack).
var goidOffset = calibrate()

// goid returns the running goroutine's id: read from its g at the offset
// calibrate found, which costs a few nanoseconds where runtime.Stack costs
// microseconds (it formats the whole stack).
//
//go:norace
func goid() uint64 {
	if goidOffset < 0 {
		return slowGoid()
	}
	return *(*uint64)(unsafe.Add(getg(), goidOffset))
}

// calibrate finds the offset of the goroutine id in the runtime's g without
// knowing the runtime's layout: it is the offset at which several
// goroutines' g hold the id runtime.Stack reports for them. The g is far
// larger than the words scanned.
func calibrate() int {
	const samples, words = 4, 32
	type sample struct {
		g  unsafe.Pointer
		id uint64
	}
	got := make([]sample, samples)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = sample{getg(), slowGoid()}
		}()
	}
	wg.Wait()
	for w := range words {
		off := w * 8
		ok := true
		for _, s := range got {
			if s.id == 0 || *(*uint64)(unsafe.Add(s.g, off)) != s.id {
				ok = false
				break
			}
		}
		if ok {
			return off
		}
	}
	return -1
}
