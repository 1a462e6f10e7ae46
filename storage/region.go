package storage

import (
	"errors"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// FileRegion is a byte range of one segment's .log file: whole batches, ready to be
// sent to a consumer or follower without copying them through user space.
type FileRegion struct {
	File vfs.File
	Pos  int64
	Len  int64
}

// Size is Len (protocol.BodyWriter).
func (r FileRegion) Size() int64 { return r.Len }

// ReadAll reads the region into memory.
func (r FileRegion) ReadAll() ([]byte, error) {
	if r.Len == 0 {
		return nil, nil
	}
	b := make([]byte, r.Len)
	n, err := r.File.ReadAt(b, r.Pos)
	if err == io.EOF && int64(n) == r.Len {
		err = nil
	}
	if err == nil && int64(n) != r.Len {
		err = io.ErrUnexpectedEOF
	}
	return b[:n], err
}

const sendfileChunk = 1 << 20

// WriteTo writes the region to w. When w exposes a socket (syscall.Conn, as *net.TCPConn
// and the protocol's response writer do) and the file is an OS file, it uses
// sendfile(2) with an explicit offset: the file's own offset never moves, so
// concurrent readers are safe, and nothing is copied through user space. Otherwise it
// copies with ReadAt + Write.
func (r FileRegion) WriteTo(w io.Writer) (int64, error) {
	if r.Len <= 0 {
		return 0, nil
	}
	if sc, ok := w.(syscall.Conn); ok && r.File != nil && r.File.Fd() != vfs.NoFd {
		if fc, ok := r.File.(syscall.Conn); ok {
			if n, err, handled := r.sendfile(fc, sc); handled {
				return n, err
			}
		}
	}
	return r.copyTo(w, 0)
}

// sendfile runs inside the file's RawConn.Control, which holds a reference on the
// descriptor: a segment closed meanwhile (retention, truncation, shutdown) keeps its
// descriptor until the send ends, so the number can't be reused by another file
// under us. No reopen through /proc/self/fd and no fstat per fetch.
func (r FileRegion) sendfile(fc, sc syscall.Conn) (written int64, err error, handled bool) {
	frc, err := fc.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	if cerr := frc.Control(func(infd uintptr) {
		written, err, handled = r.sendfileFrom(int(infd), sc)
	}); cerr != nil {
		return 0, nil, false // closed already: copyTo reports it
	}
	return written, err, handled
}

func (r FileRegion) sendfileFrom(infd int, sc syscall.Conn) (written int64, err error, handled bool) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	off := r.Pos
	remain := r.Len
	var serr error
	werr := rc.Write(func(outfd uintptr) bool {
		for remain > 0 {
			n, e := unix.Sendfile(int(outfd), infd, &off, int(min(remain, sendfileChunk)))
			if n > 0 {
				written += int64(n)
				remain -= int64(n)
			}
			switch {
			case e == unix.EAGAIN:
				return false // wait until writable
			case e == unix.EINTR:
				continue
			case e != nil:
				serr = e
				return true
			case n == 0:
				serr = io.ErrUnexpectedEOF // file shorter than the region
				return true
			}
		}
		return true
	})
	if written == 0 && (errors.Is(serr, unix.EINVAL) || errors.Is(serr, unix.ENOSYS) || errors.Is(serr, unix.EOPNOTSUPP)) {
		return 0, nil, false // sendfile not supported for this pair: copy
	}
	if serr != nil {
		return written, serr, true
	}
	return written, werr, true
}

func (r FileRegion) copyTo(w io.Writer, done int64) (int64, error) {
	buf := getBuf()
	defer putBuf(buf)
	if cap(buf.b) < 64<<10 {
		buf.b = make([]byte, 64<<10)
	}
	b := buf.b[:cap(buf.b)]
	written := done
	for written < r.Len {
		chunk := b[:min(int64(len(b)), r.Len-written)]
		n, err := r.File.ReadAt(chunk, r.Pos+written)
		if n > 0 {
			m, werr := w.Write(chunk[:n])
			written += int64(m)
			if werr != nil {
				return written - done, werr
			}
		}
		if err != nil {
			if err == io.EOF && written == r.Len {
				break
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return written - done, err
		}
	}
	return written - done, nil
}
