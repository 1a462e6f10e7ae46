package protocol

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// ErrClientClosed is returned by requests on a Client after Close.
var ErrClientClosed = errors.New("protocol: client closed")

// Defaults for ClientOptions.
const (
	// DefaultMaxResponseBytes caps a response frame read by a Client.
	DefaultMaxResponseBytes = 256 << 20
	// DefaultSoftwareName is sent as ClientSoftwareName in ApiVersions v3+.
	DefaultSoftwareName = "kgo-broker"
	// DefaultSoftwareVersion is sent as ClientSoftwareVersion.
	DefaultSoftwareVersion = "0.1.0"
)

// ClientOptions configures DialOptions. Zero values mean the defaults.
type ClientOptions struct {
	ClientID string
	// SoftwareName and SoftwareVersion go into ApiVersions v3+ (KIP-511);
	// Kafka rejects values not matching [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?.
	SoftwareName    string
	SoftwareVersion string
	// MaxResponseBytes caps the size of a response frame; a larger one
	// fails the connection.
	MaxResponseBytes int32
	// Dial opens the connection; nil uses a net.Dialer.
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	Logger *zap.Logger
	// TLS, if set, runs a TLS handshake on the dialled connection (SSL,
	// SASL_SSL); ServerName defaults to the dialled host.
	TLS *tls.Config
	// SASL, if set, authenticates after ApiVersions (SASL_PLAINTEXT,
	// SASL_SSL) with a franz-go mechanism (sasl/plain, sasl/scram).
	SASL sasl.Mechanism
}

// Client is one outbound connection to a Kafka node. It is safe for
// concurrent use: requests are pipelined on the connection in the order they
// are written and responses are matched to them by correlation id. When the
// connection fails, every waiting request gets the error and the Client stays
// failed (Err, Done); dial a new one.
type Client struct {
	nc       net.Conn
	opts     ClientOptions
	log      *zap.Logger
	versions map[int16][2]int16 // the server's ApiVersions ranges; immutable after Dial

	writeSem chan struct{} // cap 1: held while writing a frame; guards corr
	corr     int32

	mu        lockrank.Mutex // a leaf; guards pending, err and reauthDue
	pending   []*call        // written, awaiting a response, in wire order
	err       error          // sticky connection error
	reauthDue bool           // the SASL session is about to end (client_auth.go)

	done       chan struct{} // closed when the connection failed or was closed
	readerDone chan struct{}
}

type call struct {
	corr int32
	ch   chan callResult // buffered 1
}

type callResult struct {
	frame []byte // response frame after the size
	err   error
}

// Dial connects to addr, sends ApiVersions and remembers the server's version
// ranges. ctx bounds the dial and the ApiVersions exchange only.
func Dial(ctx context.Context, addr, clientID string) (*Client, error) {
	return DialOptions(ctx, addr, ClientOptions{ClientID: clientID})
}

// DialOptions is Dial with options.
func DialOptions(ctx context.Context, addr string, opts ClientOptions) (*Client, error) {
	if opts.SoftwareName == "" {
		opts.SoftwareName = DefaultSoftwareName
	}
	if opts.SoftwareVersion == "" {
		opts.SoftwareVersion = DefaultSoftwareVersion
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	dial := opts.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if opts.TLS != nil {
		if nc, err = clientTLS(ctx, nc, addr, opts.TLS); err != nil {
			return nil, err
		}
	}
	c := NewClient(nc, opts)
	if err := c.handshake(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("protocol: ApiVersions with %s: %w", addr, err)
	}
	if opts.SASL != nil {
		if err := c.saslAuthenticate(ctx, addr, opts.SASL); err != nil {
			c.Close()
			return nil, fmt.Errorf("protocol: SASL %s authentication with %s: %w", opts.SASL.Name(), addr, err)
		}
	}
	return c, nil
}

// NewClient wraps an established connection without the ApiVersions
// handshake: until one is done, Request uses kmsg's max version for every
// key. Most callers want Dial.
func NewClient(nc net.Conn, opts ClientOptions) *Client {
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c := &Client{
		nc:         nc,
		opts:       opts,
		log:        log.With(zap.Stringer("remote", nc.RemoteAddr())),
		writeSem:   make(chan struct{}, 1),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	c.mu.SetRank(lockrank.ClientCalls)
	go c.readLoop()
	return c
}

// handshake sends ApiVersions at kmsg's max version and, per KIP-511, again
// at the version the server says it serves when it answers
// UNSUPPORTED_VERSION (v0 if it does not say).
func (c *Client) handshake(ctx context.Context) error {
	version := (*kmsg.ApiVersionsRequest)(nil).MaxVersion()
	for attempt := 0; attempt < 3; attempt++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName = c.opts.SoftwareName
		req.ClientSoftwareVersion = c.opts.SoftwareVersion
		resp, err := c.requestAt(ctx, req, version)
		if err != nil {
			return err
		}
		avr := resp.(*kmsg.ApiVersionsResponse)
		if avr.ErrorCode == kerr.UnsupportedVersion.Code {
			next := int16(0)
			for _, k := range avr.ApiKeys {
				if k.ApiKey == apiKeyApiVersions {
					next = min(k.MaxVersion, version-1)
				}
			}
			if next < 0 || next >= version {
				return kerr.UnsupportedVersion
			}
			version = next
			continue
		}
		if err := kerr.ErrorForCode(avr.ErrorCode); err != nil {
			return err
		}
		m := make(map[int16][2]int16, len(avr.ApiKeys))
		for _, k := range avr.ApiKeys {
			m[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		c.versions = m
		return nil
	}
	return kerr.UnsupportedVersion
}

// Versions returns the server's range for key from the ApiVersions exchange.
func (c *Client) Versions(key int16) (min, max int16, ok bool) {
	r, ok := c.versions[key]
	return r[0], r[1], ok
}

// RemoteAddr is the server's address.
func (c *Client) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Done is closed when the connection has failed or was closed.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection is unusable, or nil while it is healthy.
// A connection whose SASL session is about to end reports ErrReauthDue:
// requests already written complete, new ones should go to a new Client.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && c.reauthDue {
		return ErrReauthDue
	}
	return c.err
}

// Close closes the connection; waiting requests fail with ErrClientClosed.
func (c *Client) Close() error {
	c.fail(ErrClientClosed)
	<-c.readerDone
	return nil
}

// Request sends req at min(kmsg's max, the server's max) and waits for the
// response. The version set on req is overwritten. An API or version the
// server does not serve is an error wrapping kerr.UnsupportedVersion, and
// nothing is sent. A Produce with Acks 0 returns (nil, nil) once written.
//
// ctx bounds the whole call. If it ends after the request was written, the
// response is read and dropped later, and the connection stays usable;
// if it ends in the middle of writing the frame, the connection is failed.
func (c *Client) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	version := req.MaxVersion()
	if c.versions != nil {
		min, max, ok := c.Versions(req.Key())
		if !ok {
			return nil, fmt.Errorf("%w: server does not serve %s", kerr.UnsupportedVersion, kmsg.NameForKey(req.Key()))
		}
		if max < version {
			version = max
		}
		if version < min {
			return nil, fmt.Errorf("%w: %s: server serves v%d-v%d, client up to v%d",
				kerr.UnsupportedVersion, kmsg.NameForKey(req.Key()), min, max, req.MaxVersion())
		}
	}
	return c.requestAt(ctx, req, version)
}

// RequestVersion is Request at an explicit version, not checked against the
// server's ranges.
func (c *Client) RequestVersion(ctx context.Context, req kmsg.Request, version int16) (kmsg.Response, error) {
	return c.requestAt(ctx, req, version)
}

func (c *Client) requestAt(ctx context.Context, req kmsg.Request, version int16) (kmsg.Response, error) {
	req.SetVersion(version)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	noResponse := false
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		noResponse = true
	}

	bp := bufPool.Get().(*[]byte)
	buf := appendRequest((*bp)[:0], req, c.opts.ClientID)
	defer func() {
		if cap(buf) <= maxPooledBuf {
			*bp = buf[:0]
			bufPool.Put(bp)
		}
	}()

	cl, err := c.write(ctx, buf, noResponse)
	if err != nil || noResponse {
		return nil, err
	}
	var res callResult
	select {
	case res = <-cl.ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if res.err != nil {
		return nil, res.err
	}
	return decodeResponse(req, res.frame)
}

// appendRequest appends a request frame with correlation id 0 (write patches
// it): size, key, version, correlation id, client id, header tags if the
// request is flexible, body.
func appendRequest(dst []byte, req kmsg.Request, clientID string) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, 0)
	if !(req.Key() == apiKeyControlledShutdown && req.GetVersion() == 0) {
		dst = kbin.AppendNullableString(dst, &clientID)
	}
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
	return dst
}

// write assigns the next correlation id, queues the call and writes the
// frame, all while holding writeSem so the queue order is the wire order.
// Waiting for writeSem honours ctx.
func (c *Client) write(ctx context.Context, frame []byte, noResponse bool) (*call, error) {
	select {
	case c.writeSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.Err()
	}
	defer func() { <-c.writeSem }()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	corr := c.corr
	c.corr++
	binary.BigEndian.PutUint32(frame[8:], uint32(corr))

	var cl *call
	if !noResponse {
		cl = &call{corr: corr, ch: make(chan callResult, 1)}
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	if cl != nil {
		c.pending = append(c.pending, cl)
	}
	c.mu.Unlock()

	// A deadline or cancellation in the middle of a frame fails the
	// connection: the rest of the frame can never be sent.
	_, hasDeadline := ctx.Deadline()
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetWriteDeadline(d)
	}
	var stop func() bool
	var fired chan struct{}
	if ctx.Done() != nil {
		fired = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			c.nc.SetWriteDeadline(time.Unix(1, 0))
			close(fired)
		})
	}
	_, err := c.nc.Write(frame)
	if stop != nil && !stop() {
		<-fired // it ran (or is running): let it finish before resetting
		hasDeadline = true
	}
	if hasDeadline {
		c.nc.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (writing a request: %v)", ctx.Err(), err)
		}
		c.fail(err)
		return nil, err
	}
	return cl, nil
}

// fail marks the connection failed with err (the first error wins), closes
// it and fails every waiting call.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.nc.Close()
	close(c.done)
	for _, cl := range pending {
		cl.ch <- callResult{err: err}
	}
}

func (c *Client) readLoop() {
	defer close(c.readerDone)
	br := bufio.NewReaderSize(c.nc, 32<<10)
	var sz [4]byte
	for {
		if _, err := io.ReadFull(br, sz[:]); err != nil {
			c.fail(connErr(err))
			return
		}
		size := int32(binary.BigEndian.Uint32(sz[:]))
		if size < 4 || size > c.opts.MaxResponseBytes {
			c.fail(fmt.Errorf("protocol: invalid response size %d (max %d)", size, c.opts.MaxResponseBytes))
			return
		}
		frame, err := readSized(func(p []byte) error { _, err := io.ReadFull(br, p); return err }, int(size))
		if err != nil {
			c.fail(connErr(err))
			return
		}
		corr := int32(binary.BigEndian.Uint32(frame))
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			c.fail(fmt.Errorf("protocol: response with correlation id %d to no request", corr))
			return
		}
		cl := c.pending[0]
		if cl.corr != corr {
			c.mu.Unlock()
			c.fail(fmt.Errorf("protocol: response correlation id %d, expected %d", corr, cl.corr))
			return
		}
		c.pending[0] = nil
		c.pending = c.pending[1:]
		c.mu.Unlock()
		cl.ch <- callResult{frame: frame}
	}
}

func connErr(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return ErrClientClosed
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decodeResponse decodes a response frame (after the size) for req.
func decodeResponse(req kmsg.Request, frame []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	b := kbin.Reader{Src: frame[4:]}
	if responseHeaderHasTags(req.Key(), req.IsFlexible()) {
		kmsg.SkipTags(&b)
		if err := b.Complete(); err != nil {
			return nil, fmt.Errorf("protocol: %s response header: %w", kmsg.NameForKey(req.Key()), err)
		}
	}
	body := b.Src
	// KIP-511: a server that does not serve our ApiVersions version
	// answers v0 with UNSUPPORTED_VERSION; ErrorCode leads every version.
	if req.Key() == apiKeyApiVersions && len(body) >= 2 &&
		int16(binary.BigEndian.Uint16(body)) == kerr.UnsupportedVersion.Code {
		resp.SetVersion(0)
	}
	if err := unsafeRead(resp, body); err != nil {
		return nil, fmt.Errorf("protocol: decoding %s v%d response: %w", kmsg.NameForKey(req.Key()), resp.GetVersion(), err)
	}
	return resp, nil
}
