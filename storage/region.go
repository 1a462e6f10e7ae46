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
// does) and the file has an OS descriptor, it uses sendfile(2) with an explicit offset
// (the file's own offset never moves, so concurrent readers are safe); otherwise it
// copies with ReadAt + Write.
func (r FileRegion) WriteTo(w io.Writer) (int64, error) {
	if r.Len <= 0 {
		return 0, nil
	}
	if sc, ok := w.(syscall.Conn); ok && r.File != nil && r.File.Fd() != vfs.NoFd {
		if n, err, handled := r.sendfile(sc); handled {
			return n, err
		}
	}
	return r.copyTo(w, 0)
}

func (r FileRegion) sendfile(sc syscall.Conn) (written int64, err error, handled bool) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	infd := int(r.File.Fd())
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
