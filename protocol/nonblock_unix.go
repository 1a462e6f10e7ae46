//go:build unix

package protocol

import (
	"errors"
	"io"
	"net"
	"syscall"
)

var errWouldBlock = errors.New("protocol: no data buffered")

// readNonblocking reads what the kernel already holds for nc without
// waiting; errWouldBlock if nothing.
func readNonblocking(nc net.Conn, p []byte) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, errWouldBlock
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), p)
		return true // never wait for readability
	})
	switch {
	case err != nil:
		return 0, err
	case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EWOULDBLOCK), errors.Is(rerr, syscall.EINTR):
		return 0, errWouldBlock
	case rerr != nil:
		return 0, rerr
	case n <= 0:
		return 0, io.EOF
	}
	return n, nil
}
