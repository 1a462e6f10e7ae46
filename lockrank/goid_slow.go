//go:build (invariants || race) && !amd64 && !arm64

package lockrank

// goidOffset: no fast goroutine id on this architecture.
const goidOffset = -1

func goid() uint64 { return slowGoid() }
