//go:build !unix

package protocol

import (
	"errors"
	"net"
)

var errWouldBlock = errors.New("protocol: no data buffered")

// readNonblocking is not available here: shutdown serves only what the
// connection's buffer already holds.
func readNonblocking(net.Conn, []byte) (int, error) { return 0, errWouldBlock }
