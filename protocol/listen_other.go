//go:build !unix

package protocol

import "net"

// SetListenBacklog is a no-op where listen(2) cannot be called again: the
// listener keeps the system's accept queue length.
func SetListenBacklog(ln net.Listener, backlog int) error { return nil }
