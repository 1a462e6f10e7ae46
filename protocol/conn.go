package protocol

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// conn is one accepted connection. Two goroutines serve it:
//
//   - readLoop reads and decodes frames and queues them (at most
//     MaxQueuedRequests ahead);
//   - serveLoop takes them from the queue in order, calls the Handler, and
//     writes each response before taking the next request.
//
// A frame that fails to decode is queued as an error item: the connection is
// closed when serveLoop reaches it, after the responses to the requests
// before it were written (Kafka handles one request per connection at a time,
// so it would have answered those first too).
type conn struct {
	srv *Server
	nc  net.Conn
	// br reads the connection through head. It is pooled: an idle
	// connection gives it back while it waits for its next request
	// (awaitRequest), so 10,000 idle clients do not hold 160 MiB of read
	// buffers (issue 16). readLoop only.
	br     *bufio.Reader
	head   headReader
	log    *zap.Logger
	ctx    context.Context
	cancel context.CancelFunc

	queue      chan *item    // readLoop -> serveLoop; closed by readLoop
	queued     atomic.Int64  // bytes of frames read and not yet handled
	freed      chan struct{} // cap 1: serveLoop finished an item
	stop       chan struct{} // closed by serveLoop when it exits
	readerDone chan struct{} // closed when readLoop returned
	done       chan struct{} // closed when the connection is closed and both loops returned

	shutdown     atomic.Bool // set by Server.Shutdown
	shutdownSeen bool        // readLoop only: the shutdown deadline fired mid-frame
	nonblocking  bool        // readLoop only: connReader reads without waiting
	reuser       FrameReuser // the Handler, if it lets frames be reused
	pooled       *[]byte     // readLoop only: the pooled buffer of the frame just read
	software     [2]string   // readLoop only: the client's software name and version (stamp)

	sess session // authentication state (auth_conn.go)

	// mutedUntil is the end of the current throttle (KIP-219) in
	// UnixNano, 0 when not throttled: set by serveLoop, read by both loops.
	mutedUntil atomic.Int64

	admittedIP net.IP       // the address Server.Admit counted
	lastActive atomic.Int64 // UnixNano of the last request (Server.CloseLeastRecent)
}

// item is one queued request, or the reason to close the connection.
type item struct {
	req *Request
	// apiVersionsErr: answer the KIP-511 v0 ApiVersions error response
	// instead of calling the handler.
	apiVersionsErr bool
	// err closes the connection when reached.
	err error
	// size is the frame's length, counted against MaxQueuedBytes.
	size int64
	// frame is the pooled buffer req was decoded from, or nil.
	frame *[]byte
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.baseCtx)
	if s.Security.TLS != nil {
		// The handshake runs on the connection's reader goroutine
		// (authenticate), never in the accept loop.
		nc = tls.Server(nc, s.Security.TLS())
	}
	reuser, _ := s.Handler.(FrameReuser)
	return &conn{
		reuser:     reuser,
		srv:        s,
		nc:         nc,
		log:        s.logger().With(zap.String("listener", s.ListenerName), zap.Stringer("remote", nc.RemoteAddr())),
		ctx:        ctx,
		cancel:     cancel,
		queue:      make(chan *item, s.maxQueued()),
		freed:      make(chan struct{}, 1),
		stop:       make(chan struct{}),
		readerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
}

func (c *conn) start() {
	c.lastActive.Store(time.Now().UnixNano())
	c.head.c = c
	c.attachReader()
	go c.readLoop()
	go c.serveLoop()
}

// beginShutdown makes readLoop stop before the next request. A reader waiting
// for the first byte of a request is woken by a past read deadline; a reader
// in the middle of a frame finishes that frame first.
func (c *conn) beginShutdown() {
	if c.shutdown.Swap(true) {
		return // the past deadline is set once (readFull relies on it)
	}
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) setIdleDeadline() {
	var d time.Time
	if t := c.srv.idleTimeout(); t > 0 {
		d = time.Now().Add(t)
	}
	c.nc.SetReadDeadline(d)
}

// setWriteDeadline bounds a response write by the idle timeout: a client
// that stops reading is as good as idle.
func (c *conn) setWriteDeadline() {
	var d time.Time
	if t := c.srv.idleTimeout(); t > 0 {
		d = time.Now().Add(t)
	}
	c.nc.SetWriteDeadline(d)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readFull is io.ReadFull that survives the one past deadline set by
// beginShutdown in the middle of a frame.
func (c *conn) readFull(p []byte) error {
	for n := 0; n < len(p); {
		m, err := c.br.Read(p[n:])
		n += m
		if err != nil {
			if n == len(p) {
				return nil
			}
			if isTimeout(err) && c.shutdown.Load() && !c.shutdownSeen {
				c.shutdownSeen = true
				c.setIdleDeadline()
				continue
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// firstFrameChunk is how much of a frame is allocated before its bytes
// arrive; a frame size is a claim, so a big frame's buffer grows as the data
// comes in.
const firstFrameChunk = 1 << 20

// readFrame reads one size-prefixed frame. It checks the size before
// allocating anything.
func (c *conn) readFrame() ([]byte, error) {
	var sz [4]byte
	if err := c.readFull(sz[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sz[:]))
	if max := c.srv.maxRequestBytes(); size < 0 || size > max {
		return nil, fmt.Errorf("%w: %d (socket.request.max.bytes %d)", ErrInvalidFrameSize, size, max)
	}
	if !c.reserve(int64(size)) {
		return nil, net.ErrClosed
	}
	if c.reuser != nil && size > 0 && size <= firstFrameChunk {
		// The same single allocation readSized would make, from a pool.
		bp := getFrame(int(size))
		if err := c.readFull(*bp); err != nil {
			putFrame(bp)
			return nil, err
		}
		c.pooled = bp
		return *bp, nil
	}
	return readSized(c.readFull, int(size))
}

// Frame buffers for FrameReuser handlers, by power-of-two capacity class
// from 4 KiB up to firstFrameChunk.
const (
	minPooledFrameShift = 12 // 4 KiB
	maxPooledFrameShift = 20 // firstFrameChunk
)

var framePools [maxPooledFrameShift - minPooledFrameShift + 1]sync.Pool

func frameClass(size int) int {
	return max(bits.Len(uint(size-1)), minPooledFrameShift) - minPooledFrameShift
}

// getFrame returns a buffer of length size (1 to firstFrameChunk).
func getFrame(size int) *[]byte {
	c := frameClass(size)
	if bp, ok := framePools[c].Get().(*[]byte); ok {
		*bp = (*bp)[:size]
		return bp
	}
	b := make([]byte, size, 1<<(c+minPooledFrameShift))
	return &b
}

func putFrame(bp *[]byte) {
	c := frameClass(cap(*bp))
	if c < len(framePools) && cap(*bp) == 1<<(c+minPooledFrameShift) {
		framePools[c].Put(bp)
	}
}

// readSized reads size bytes with readFull into a buffer that starts at
// firstFrameChunk and doubles as the bytes arrive, so a peer that claims a
// big frame and sends little costs little.
func readSized(readFull func([]byte) error, size int) ([]byte, error) {
	buf := make([]byte, 0, min(size, firstFrameChunk))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), size))
			copy(grown, buf)
			buf = grown
		}
		if err := readFull(buf[len(buf):cap(buf)]); err != nil {
			return nil, err
		}
		buf = buf[:cap(buf)]
	}
	return buf, nil
}

// reserve waits until a frame of size bytes fits the read-ahead byte budget
// (MaxQueuedBytes); a frame always fits when nothing is queued. It returns
// false if the connection is closing.
func (c *conn) reserve(size int64) bool {
	budget := c.srv.maxQueuedBytes()
	for {
		q := c.queued.Load()
		if q == 0 || q+size <= budget {
			break
		}
		select {
		case <-c.freed:
		case <-c.stop:
			return false
		}
		// Waiting is not idleness: restart the idle clock for the
		// rest of the frame.
		c.setIdleDeadline()
	}
	c.queued.Add(size)
	return true
}

// release returns an item's frame bytes to the budget.
func (c *conn) release(size int64) {
	c.queued.Add(-size)
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

func (c *conn) push(it *item) bool {
	select {
	case c.queue <- it:
		return true
	case <-c.stop:
		return false
	}
}

func (c *conn) readLoop() {
	defer close(c.readerDone)
	defer close(c.queue)
	defer c.releaseReader()
	if !c.authenticate() {
		return
	}
	drained := 0 // frames read after Shutdown began
	for {
		// Set the deadline before looking at the shutdown flag:
		// beginShutdown sets the flag before its past deadline, so one
		// of the two is always seen.
		c.setIdleDeadline()
		c.shutdownSeen = false
		if c.shutdown.Load() {
			// Shutting down: serve what the client already sent
			// (buffered here or in the kernel), read nothing new;
			// at most a queue's worth, so a client that keeps
			// pipelining does not hold the shutdown up.
			if drained >= cap(c.queue) || !c.moreBuffered() {
				return
			}
			drained++
		} else if err := c.awaitRequest(); err != nil {
			switch {
			case isTimeout(err) && c.shutdown.Load():
				continue
			case isTimeout(err) && c.queued.Load() > 0:
				// Not idle: a request is still being handled.
				if h := c.srv.testHookBusyNotIdle; h != nil {
					h()
				}
				continue
			case isTimeout(err):
				c.log.Debug("closing idle connection", zap.Duration("connections.max.idle.ms", c.srv.idleTimeout()))
			case errors.Is(err, net.ErrClosed):
			default:
				// The client went away: handlers need not finish
				// work nobody will read.
				if !errors.Is(err, io.EOF) {
					c.log.Debug("read failed", zap.Error(err))
				}
				c.cancel()
			}
			return
		}
		frame, err := c.readFrame()
		if err != nil {
			if errors.Is(err, ErrInvalidFrameSize) {
				c.push(&item{err: err})
			} else if !errors.Is(err, net.ErrClosed) {
				c.log.Debug("read failed in the middle of a request", zap.Error(err))
				c.cancel()
			}
			return
		}
		pooled := c.pooled
		c.pooled = nil
		req, err := c.decode(frame)
		size := int64(len(frame))
		switch {
		case err == nil:
			it := &item{req: req, size: size}
			if pooled != nil && c.reuser.ReusesFrame(req.Key) {
				it.frame = pooled
			}
			if !c.push(it) {
				return
			}
		case req != nil && req.Key == apiKeyApiVersions && req.Msg == nil && errors.Is(err, ErrUnsupportedVersion):
			// KIP-511: answered, and the connection stays open.
			if !c.push(&item{req: req, size: size, apiVersionsErr: true}) {
				return
			}
		default:
			c.push(&item{req: req, err: err})
			return
		}
	}
}

// connReader is the bufio.Reader's source: the connection, or during
// shutdown a non-blocking read of what the kernel already holds.
type connReader struct{ c *conn }

func (r connReader) Read(p []byte) (int, error) {
	if r.c.nonblocking {
		return readNonblocking(r.c.nc, p)
	}
	return r.c.nc.Read(p)
}

// readerPool holds the read buffers of connections that are not idle.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// headReader is br's source: first what awaitRequest read while the
// connection held no read buffer, then the connection.
type headReader struct {
	c      *conn
	buf    [256]byte
	off, n int
}

func (h *headReader) Read(p []byte) (int, error) {
	if h.off < h.n {
		k := copy(p, h.buf[h.off:h.n])
		h.off += k
		return k, nil
	}
	return connReader{h.c}.Read(p)
}

func (c *conn) attachReader() {
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(&c.head)
}

func (c *conn) releaseReader() {
	if c.br == nil {
		return
	}
	c.br.Reset(nil)
	readerPool.Put(c.br)
	c.br = nil
}

// awaitRequest waits for the first bytes of the next request. With nothing
// buffered the connection waits without a read buffer: it reads into head
// (a request of up to 256 bytes arrives whole, in the one read it took
// before) and takes a pooled buffer again once bytes came.
func (c *conn) awaitRequest() error {
	if c.br.Buffered() > 0 || c.head.off < c.head.n {
		// (head is read whole into an empty buffer; the check keeps
		// its bytes safe should that change)
		return nil
	}
	c.releaseReader()
	n, err := connReader{c}.Read(c.head.buf[:])
	c.head.off, c.head.n = 0, n
	c.attachReader()
	if n > 0 {
		return nil // an error with the bytes comes again on the next read
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// moreBuffered reports whether at least one byte the client sent before now
// can be read without waiting.
func (c *conn) moreBuffered() bool {
	if c.br.Buffered() > 0 {
		return true
	}
	c.nonblocking = true
	defer func() { c.nonblocking = false }()
	_, err := c.br.Peek(1)
	if isTimeout(err) {
		// beginShutdown's past deadline landed after ours; it is
		// set only once.
		c.setIdleDeadline()
		_, err = c.br.Peek(1)
	}
	return err == nil
}

// decode is DecodeRequest with the connection's context filled in and a
// last-resort recover: a panic while decoding closes the connection.
func (c *conn) decode(frame []byte) (req *Request, err error) {
	defer func() {
		if r := recover(); r != nil {
			var key, version int16 = -1, -1
			if len(frame) >= 4 {
				key = int16(binary.BigEndian.Uint16(frame))
				version = int16(binary.BigEndian.Uint16(frame[2:]))
			}
			c.log.Error("panic decoding request", zap.Int16("key", key), zap.Int16("version", version),
				zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			req, err = nil, fmt.Errorf("%w: decoder panic", ErrMalformedRequest)
		}
	}()
	req, err = DecodeRequest(frame, c.srv.versions())
	if req != nil {
		req.Listener = c.srv.ListenerName
		req.RemoteAddr = c.nc.RemoteAddr()
		c.stamp(req)
	}
	return req, err
}

// validSoftware is ApiVersionsRequest.isValid's pattern for the client
// software name and version.
var validSoftware = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

// stamp sets the client software the connection's ApiVersions v3+ named
// (SocketServer registers it as the channel's ClientInformation when the
// request is valid; "unknown" until then). readLoop only.
func (c *conn) stamp(req *Request) {
	if c.software[0] == "" {
		c.software = [2]string{"unknown", "unknown"}
	}
	if av, ok := req.Msg.(*kmsg.ApiVersionsRequest); ok && req.Version >= 3 &&
		validSoftware.MatchString(av.ClientSoftwareName) && validSoftware.MatchString(av.ClientSoftwareVersion) {
		// copies: the strings alias the request's frame, which the
		// connection would otherwise keep for its whole life (4 KiB each)
		c.software = [2]string{strings.Clone(av.ClientSoftwareName), strings.Clone(av.ClientSoftwareVersion)}
	}
	req.ClientSoftwareName, req.ClientSoftwareVersion = c.software[0], c.software[1]
}

func (c *conn) serveLoop() {
	defer c.finish()
	for it := range c.queue {
		if !c.waitMuted() {
			return
		}
		if it.err != nil {
			c.srv.logProtocolError(c.log, it.req, it.err)
			return
		}
		ok := c.handle(it)
		if it.frame != nil {
			// The handler and the response writer are done with
			// the request: nothing refers to the frame any more.
			putFrame(it.frame)
			it.frame, it.req = nil, nil
		}
		c.release(it.size)
		if !ok {
			return
		}
	}
}

func (c *conn) finish() {
	close(c.stop)
	c.nc.Close()
	c.cancel()
	<-c.readerDone
	c.srv.connDone(c)
	close(c.done)
}

// handle serves one request; false closes the connection.
func (c *conn) handle(it *item) (ok bool) {
	req := it.req
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("panic serving request; closing connection",
				zap.Int16("key", req.Key), zap.String("api", kmsg.NameForKey(req.Key)),
				zap.Int16("version", req.Version), zap.Int32("correlation_id", req.CorrelationID),
				zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			ok = false
		}
	}()
	if it.apiVersionsErr {
		return c.writeMsg(req, 0, c.srv.apiVersionsErrorResponse()) == nil
	}
	req.Principal = c.sess.principal
	if c.srv.Admit != nil {
		c.lastActive.Store(time.Now().UnixNano())
	}
	if handled, ok := c.checkSession(req); handled {
		return ok
	}
	// time.Now only with an observer: the hot path pays nothing otherwise.
	var start time.Time
	if c.srv.Observe != nil {
		start = time.Now()
	}
	resp, err := c.srv.Handler.Handle(c.ctx, req)
	if err != nil {
		c.log.Warn("handler failed; closing connection", zap.String("api", kmsg.NameForKey(req.Key)),
			zap.Int16("version", req.Version), zap.Int32("correlation_id", req.CorrelationID), zap.Error(err))
		return false
	}
	switch {
	case resp.NoResponse:
	case resp.Body != nil:
		err = c.writeBody(req, resp.Body)
	case resp.Msg != nil:
		if resp.Msg.Key() != req.Key {
			err = fmt.Errorf("handler answered %s to %s", kmsg.NameForKey(resp.Msg.Key()), kmsg.NameForKey(req.Key))
			break
		}
		err = c.writeMsg(req, req.Version, resp.Msg)
	default:
		err = errors.New("handler returned an empty Response")
	}
	if err != nil {
		if !errors.Is(err, net.ErrClosed) {
			c.log.Warn("writing response failed; closing connection", zap.String("api", kmsg.NameForKey(req.Key)),
				zap.Int16("version", req.Version), zap.Int32("correlation_id", req.CorrelationID), zap.Error(err))
		}
		return false
	}
	if c.srv.Observe != nil {
		c.srv.Observe(req.Key, req.Version, time.Since(start))
	}
	if resp.Throttle > 0 {
		// KIP-219: the response went out at once; the channel stays
		// muted for the throttle time (SocketServer's
		// ChannelThrottlingCallback, ThrottledChannel).
		c.mutedUntil.Store(time.Now().Add(resp.Throttle).UnixNano())
	}
	return true
}

// waitMuted waits while the connection is throttled; false when it closed
// meanwhile.
func (c *conn) waitMuted() bool {
	until := c.mutedUntil.Load()
	if until == 0 {
		return true
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		c.mutedUntil.CompareAndSwap(until, 0)
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.stop:
		return false
	case <-c.ctx.Done():
		return false
	}
}

// responseHeaderHasTags: response header v1 (one tag byte) is used when the
// response is flexible, except for ApiVersions whose response header is
// always v0 so that any client can read it.
func responseHeaderHasTags(key int16, flexible bool) bool {
	return flexible && key != apiKeyApiVersions
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxPooledBuf = 1 << 20

// writeMsg encodes msg at version and writes the frame with one Write.
func (c *conn) writeMsg(req *Request, version int16, msg kmsg.Response) error {
	if msg.GetVersion() != version {
		// Only when needed: a handler may share one read-only
		// response between connections.
		msg.SetVersion(version)
	}
	bp := bufPool.Get().(*[]byte)
	buf := AppendResponse((*bp)[:0], req.Key, req.CorrelationID, msg)
	var err error
	if len(buf)-4 > math.MaxInt32 {
		err = fmt.Errorf("response of %d bytes is too large", len(buf))
	} else {
		c.setWriteDeadline()
		_, err = c.nc.Write(buf)
	}
	if cap(buf) <= maxPooledBuf {
		*bp = buf[:0]
		bufPool.Put(bp)
	}
	return err
}

// AppendResponse appends a whole response frame to dst: size, correlation
// id, the response header tags byte if the response is flexible and key is
// not ApiVersions, and msg encoded at its current version.
func AppendResponse(dst []byte, key int16, correlationID int32, msg kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if responseHeaderHasTags(key, msg.IsFlexible()) {
		dst = append(dst, 0)
	}
	dst = msg.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

var bufioPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// bodyConn is the io.Writer a BodyWriter writes to: Writes are buffered (with
// the response header) so that small pieces share syscalls; ReadFrom goes to
// the connection's ReadFrom once the buffer is flushed; SyscallConn flushes
// and hands out the socket, so that sendfile(2) on it (storage.FileRegion)
// lands after everything written before.
type bodyConn struct {
	bw *bufio.Writer
	nc net.Conn
}

func (w *bodyConn) Write(p []byte) (int, error)         { return w.bw.Write(p) }
func (w *bodyConn) ReadFrom(r io.Reader) (int64, error) { return w.bw.ReadFrom(r) }

var errNoSyscallConn = errors.New("protocol: connection has no file descriptor")

// SyscallConn implements syscall.Conn.
func (w *bodyConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := w.nc.(syscall.Conn)
	if !ok {
		return nil, errNoSyscallConn
	}
	if err := w.bw.Flush(); err != nil {
		return nil, err
	}
	return sc.SyscallConn()
}

// writeBody writes a streamed response: the header, then the body, through a
// bodyConn.
func (c *conn) writeBody(req *Request, body BodyWriter) error {
	size := body.Size()
	flexible := req.Msg != nil && req.Msg.IsFlexible()
	hdr := int64(4)
	if responseHeaderHasTags(req.Key, flexible) {
		hdr++
	}
	if size < 0 || hdr+size > math.MaxInt32 {
		return fmt.Errorf("response body size %d out of range", size)
	}
	var head [9]byte
	binary.BigEndian.PutUint32(head[:], uint32(hdr+size))
	binary.BigEndian.PutUint32(head[4:], uint32(req.CorrelationID))

	bw := bufioPool.Get().(*bufio.Writer)
	c.setWriteDeadline()
	bw.Reset(c.nc)
	defer func() {
		bw.Reset(nil)
		bufioPool.Put(bw)
	}()
	bw.Write(head[:4+hdr])
	n, err := body.WriteTo(&bodyConn{bw: bw, nc: c.nc})
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("response body wrote %d bytes, Size() said %d", n, size)
	}
	return bw.Flush()
}

// apiVersionsErrorResponse is Kafka's answer to an ApiVersions version it
// does not serve (KIP-511): a v0 response with UNSUPPORTED_VERSION and only
// the ApiVersions range, so the client retries with a version it can use.
func (s *Server) apiVersionsErrorResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = 35 // UNSUPPORTED_VERSION
	min, max, ok := servedRange(s.versions(), apiKeyApiVersions, resp.MaxVersion())
	if !ok {
		min, max = 0, 0
	}
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = apiKeyApiVersions, min, max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}

// Protocol errors are logged at Warn the first time each kind is seen by a
// Server and at Debug afterwards, so a misbehaving client that reconnects in
// a loop does not flood the log.
type errKind int

const (
	kindFrameSize errKind = iota
	kindUnknownKey
	kindVersion
	kindMalformed
	numErrKinds
)

func (s *Server) logProtocolError(log *zap.Logger, req *Request, err error) {
	kind := kindMalformed
	switch {
	case errors.Is(err, ErrInvalidFrameSize):
		kind = kindFrameSize
	case errors.Is(err, ErrUnknownAPIKey):
		kind = kindUnknownKey
	case errors.Is(err, ErrUnsupportedVersion):
		kind = kindVersion
	}
	fields := []zap.Field{zap.Error(err)}
	if req != nil {
		fields = append(fields, zap.Int16("key", req.Key), zap.Int16("version", req.Version),
			zap.Int32("correlation_id", req.CorrelationID), zap.String("client_id", req.ClientID))
	}
	msg := "invalid request; closing connection"
	if s.loggedKinds[kind].CompareAndSwap(false, true) {
		log.Warn(msg+" (further ones of this kind are logged at debug)", fields...)
		return
	}
	log.Debug(msg, fields...)
}
