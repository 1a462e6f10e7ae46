package protocol

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// Defaults for the Server's zero-valued fields, named after Kafka's configs.
const (
	// DefaultMaxRequestBytes is socket.request.max.bytes.
	DefaultMaxRequestBytes = 104857600
	// DefaultIdleTimeout is connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMaxQueuedRequests is how many decoded requests a connection
	// reads ahead of the one being handled.
	DefaultMaxQueuedRequests = 16
	// DefaultMaxQueuedBytes is the read-ahead budget per connection.
	DefaultMaxQueuedBytes = 1 << 20
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("protocol: server closed")

// Request is one decoded request and where it came from.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	// ClientID is "" when the client sent null (or, for ControlledShutdown
	// v0, nothing).
	ClientID string
	// Msg is the decoded body, at Version. Its strings and byte slices
	// alias the request frame, which is never reused, so a handler may
	// keep them.
	Msg        kmsg.Request
	Listener   string
	RemoteAddr net.Addr
	// ClientSoftwareName and ClientSoftwareVersion are what the
	// connection's last valid ApiVersions v3+ named (KIP-511), "unknown"
	// before one; "" for requests that did not come from a connection.
	ClientSoftwareName, ClientSoftwareVersion string
	// Principal is the connection's authenticated principal
	// (User:ANONYMOUS on PLAINTEXT); requests served in-process set it
	// themselves.
	Principal Principal
	// Size is the request's size in bytes after the frame's length
	// (Kafka's RequestChannel.Request.sizeInBytes), which the produce
	// byte-rate quota counts.
	Size int
}

// Response is what a Handler answers.
//
// Exactly one of Msg, Body or NoResponse is used, in this order of
// precedence: NoResponse writes nothing (acks=0 produce); Body streams a
// pre-encoded response body; Msg is encoded with kmsg at the request's
// version (the server sets it).
//
// Throttle (KIP-219) mutes the connection for that long after the response
// was written (or, with NoResponse, after the request was handled): no
// further request of the connection is read or handled until it passes.
// The handler puts the same time in the response's throttle_time_ms, so the
// client holds back as well.
type Response struct {
	Msg        kmsg.Response
	Body       BodyWriter
	NoResponse bool
	Throttle   time.Duration
}

// BodyWriter streams a response body: everything after the response header.
// The server writes the frame size (4 + header + Size()) and the header, then
// calls WriteTo exactly once. w buffers small Writes; it also implements
// io.ReaderFrom and syscall.Conn, and both flush what was written before
// them, so a storage.FileRegion can sendfile(2) straight to the socket.
// WriteTo must write exactly Size() bytes; anything else closes the
// connection.
type BodyWriter interface {
	Size() int64
	WriteTo(w io.Writer) (int64, error)
}

// Handler serves requests. Requests of one connection are handled one at a
// time, in the order they arrived. A returned error closes the connection
// (after the responses to earlier requests were written). The context is
// cancelled when the connection closes or the client goes away (EOF), and
// when Shutdown gives up or Close is called.
type Handler interface {
	Handle(ctx context.Context, req *Request) (Response, error)
}

// FrameReuser is implemented by a Handler that keeps no reference into a
// request of some keys once Handle returned (the decoded Msg aliases the
// frame): the server then reuses those frames' buffers for later requests
// instead of allocating one per request. Only frames of at most 1 MiB are
// reused.
type FrameReuser interface {
	ReusesFrame(key int16) bool
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) (Response, error)

// Handle implements Handler.
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (Response, error) { return f(ctx, req) }

// ConnState is a connection's state change reported to Server.ConnState.
type ConnState int

const (
	// StateNew: the connection was accepted.
	StateNew ConnState = iota
	// StateClosed: the connection was closed; reported once.
	StateClosed
)

func (s ConnState) String() string {
	switch s {
	case StateNew:
		return "new"
	case StateClosed:
		return "closed"
	}
	return "unknown"
}

// Server serves the Kafka protocol on one or more listeners. Set the fields
// before the first Serve and do not change them afterwards.
type Server struct {
	Handler Handler
	// Versions is the served key/version table; nil serves everything kmsg
	// can decode.
	Versions VersionTable
	// MaxRequestBytes is socket.request.max.bytes; 0 means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int32
	// ListenerName is copied into every Request (e.g. "PLAINTEXT").
	ListenerName string
	// Logger defaults to zap.NewNop().
	Logger *zap.Logger
	// Security is the listener's TLS and SASL (auth.go); the zero value
	// is PLAINTEXT with every connection User:ANONYMOUS.
	Security ServerSecurity

	// MaxConnections caps open connections across all listeners served;
	// Serve stops accepting while the cap is reached (like Kafka's
	// max.connections). 0 means no cap.
	MaxConnections int
	// MaxQueuedRequests is the read-ahead per connection; 0 means
	// DefaultMaxQueuedRequests.
	MaxQueuedRequests int
	// MaxQueuedBytes bounds the read-ahead by size: the next frame is
	// read only while the frames read and not yet handled, plus it, fit
	// in this many bytes, or when none are pending (so one request of
	// any size up to MaxRequestBytes is always served, as in Kafka).
	// 0 means DefaultMaxQueuedBytes.
	MaxQueuedBytes int64
	// IdleTimeout closes a connection that sends nothing for this long
	// while none of its requests is pending (connections.max.idle.ms),
	// and bounds each response write; 0 means DefaultIdleTimeout,
	// negative means never.
	IdleTimeout time.Duration
	// ConnState, if set, is called when a connection is accepted and
	// when it is closed (a hook for connection metrics).
	ConnState func(net.Conn, ConnState)
	// Admit, if set, decides on every accepted connection before it is
	// served (Kafka's ConnectionQuotas, through the acceptor): it may
	// block (the listener accepts nothing meanwhile); an error closes the
	// connection at once, or after a *ConnThrottled's Delay. An admitted
	// connection is released with Release once it closed.
	Admit   func(ctx context.Context, listener string, ip net.IP) error
	Release func(listener string, ip net.IP)
	// Observe, if set, is called once per request after its response was
	// written (or, for acks=0 produce, after it was handled), with the API
	// key and version and the time from dequeuing the request to then: the
	// hook for request metrics (Kafka's RequestMetrics). It runs on the
	// connection's goroutine, so it must be quick and should not allocate.
	// Requests that close the connection are not observed.
	Observe func(key, version int16, d time.Duration)

	initOnce sync.Once
	closing  chan struct{} // closed by Shutdown/Close
	sem      chan struct{} // MaxConnections slots, nil when uncapped
	baseCtx  context.Context
	cancel   context.CancelFunc

	loggedKinds [numErrKinds]atomic.Bool

	testHookBusyNotIdle func() // tests: the idle deadline fired while busy

	mu        lockrank.Mutex // a leaf (ranked by init); guards the fields below
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	closed    bool
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.mu.SetRank(lockrank.ConnSet)
		s.closing = make(chan struct{})
		if s.MaxConnections > 0 {
			s.sem = make(chan struct{}, s.MaxConnections)
		}
		s.baseCtx, s.cancel = context.WithCancel(context.Background())
		s.listeners = make(map[net.Listener]struct{})
		s.conns = make(map[*conn]struct{})
	})
}

func (s *Server) logger() *zap.Logger {
	if s.Logger == nil {
		return zap.NewNop()
	}
	return s.Logger
}

func (s *Server) maxRequestBytes() int32 {
	if s.MaxRequestBytes <= 0 {
		return DefaultMaxRequestBytes
	}
	return s.MaxRequestBytes
}

func (s *Server) maxQueued() int {
	if s.MaxQueuedRequests <= 0 {
		return DefaultMaxQueuedRequests
	}
	return s.MaxQueuedRequests
}

func (s *Server) maxQueuedBytes() int64 {
	if s.MaxQueuedBytes <= 0 {
		return DefaultMaxQueuedBytes
	}
	return s.MaxQueuedBytes
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout == 0 {
		return DefaultIdleTimeout
	}
	return s.IdleTimeout
}

func (s *Server) versions() VersionTable {
	if s.Versions == nil {
		return kmsgVersions{}
	}
	return s.Versions
}

// Serve accepts connections on l until Shutdown or Close, or until Accept
// fails with a permanent error. It always closes l. After Shutdown or Close
// it returns ErrServerClosed.
func (s *Server) Serve(l net.Listener) error {
	s.init()
	if s.Handler == nil {
		l.Close()
		return errors.New("protocol: Server.Handler is nil")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()

	// Admit may wait for a free slot; Shutdown and Close end the wait.
	actx, cancelAdmit := context.WithCancel(s.baseCtx)
	defer cancelAdmit()
	go func() {
		select {
		case <-s.closing:
			cancelAdmit()
		case <-actx.Done():
		}
	}()
	log := s.logger()
	var backoff time.Duration
	for {
		if s.sem != nil {
			select {
			case s.sem <- struct{}{}:
			case <-s.closing:
				return ErrServerClosed
			}
		}
		nc, err := l.Accept()
		if err != nil {
			s.release()
			select {
			case <-s.closing:
				return ErrServerClosed
			default:
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				// EMFILE and the like: back off like net/http.
				if backoff == 0 {
					backoff = 5 * time.Millisecond
				} else if backoff *= 2; backoff > time.Second {
					backoff = time.Second
				}
				log.Warn("accept failed; retrying", zap.String("listener", s.ListenerName), zap.Error(err), zap.Duration("backoff", backoff))
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-s.closing:
					t.Stop()
					return ErrServerClosed
				}
				continue
			}
			return err
		}
		backoff = 0
		var ip net.IP
		if s.Admit != nil {
			if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
				ip = ta.IP
			}
			if err := s.Admit(actx, s.ListenerName, ip); err != nil {
				s.refuse(nc, err)
				continue
			}
		}
		c := newConn(s, nc)
		c.admittedIP = ip
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			s.release()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		if s.ConnState != nil {
			s.ConnState(nc, StateNew)
		}
		c.start()
	}
}

// ConnThrottled is the error of an Admit that closes the connection after
// Delay (a connection rate quota, Kafka's delayed close of a throttled
// socket), not at once.
type ConnThrottled interface{ CloseDelay() time.Duration }

// refuse closes a connection Admit refused.
func (s *Server) refuse(nc net.Conn, err error) {
	s.release()
	s.logger().Debug("connection refused by the connection quotas", zap.String("listener", s.ListenerName),
		zap.Stringer("remote", nc.RemoteAddr()), zap.Error(err))
	var ct ConnThrottled
	if errors.As(err, &ct) && ct.CloseDelay() > 0 {
		time.AfterFunc(ct.CloseDelay(), func() { nc.Close() })
		return
	}
	nc.Close()
}

// CloseLeastRecent closes the open connection whose last request is the
// oldest (Kafka's processor closing its least recently used channel when
// the broker is over max.connections) and reports whether there was one.
func (s *Server) CloseLeastRecent() bool {
	s.init()
	s.mu.Lock()
	var victim *conn
	for c := range s.conns {
		if victim == nil || c.lastActive.Load() < victim.lastActive.Load() {
			victim = c
		}
	}
	s.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.nc.Close()
	return true
}

func (s *Server) release() {
	if s.sem != nil {
		<-s.sem
	}
}

// connDone is called once by a connection after it closed.
func (s *Server) connDone(c *conn) {
	// Report first: waitConns waits only for connections still in s.conns,
	// so a connection leaves it only once its StateClosed was delivered.
	if s.ConnState != nil {
		s.ConnState(c.nc, StateClosed)
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.release()
	if s.Release != nil && s.Admit != nil {
		s.Release(s.ListenerName, c.admittedIP)
	}
}

// stopAccepting closes the listeners and marks the server closed; it returns
// the connections open at that moment.
func (s *Server) stopAccepting() []*conn {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	for l := range s.listeners {
		l.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Shutdown stops the server gracefully, like net/http's: it closes the
// listeners, stops reading new requests, lets every request already read
// finish and its response be written, and closes each connection as soon as
// it is idle. Requests that had reached the server's socket buffer when
// Shutdown began are still read and served (up to MaxQueuedRequests per
// connection); anything sent later is not read, and the client sees the
// connection close.
// If ctx ends first, the remaining connections are closed, handler contexts
// are cancelled and ctx.Err() is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	conns := s.stopAccepting()
	for _, c := range conns {
		c.beginShutdown()
	}
	for _, c := range conns {
		select {
		case <-c.done:
		case <-ctx.Done():
			s.closeAll()
			return ctx.Err()
		}
	}
	return nil
}

// Close closes the listeners and all connections immediately, cancelling
// handler contexts. It does not wait for handlers to return.
func (s *Server) Close() error {
	s.stopAccepting()
	s.closeAll()
	return nil
}

// waitConns waits until every connection has closed (tests).
func (s *Server) waitConns() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		<-c.done
	}
}

func (s *Server) closeAll() {
	s.cancel()
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.nc.Close()
	}
}
