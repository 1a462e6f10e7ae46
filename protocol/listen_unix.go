//go:build unix

package protocol

import (
	"fmt"
	"net"
	"syscall"
)

// SetListenBacklog sets the accept queue of a listening TCP socket to
// backlog connections (socket.listen.backlog.size, Kafka's Acceptor binds
// with it; default 50). Go listens with the system maximum
// (net.core.somaxconn); listen(2) on a socket that already listens only
// updates the queue's length, so the listener is not re-created. With
// max.connections reached the acceptor stops accepting, and connections
// beyond the queue are refused by the kernel as by Kafka.
func SetListenBacklog(ln net.Listener, backlog int) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok || backlog <= 0 {
		return nil
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), backlog) }); err != nil {
		return err
	}
	if lerr != nil {
		return fmt.Errorf("listen backlog %d: %w", backlog, lerr)
	}
	return nil
}
