package security_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security"
)

// rawConn speaks frames by hand to a SASL_PLAINTEXT PLAIN listener.
func rawConn(t *testing.T) (net.Conn, *recorder) {
	t.Helper()
	addr, rec, _ := serve(t, "SASL_PLAINTEXT", security.MapProps{"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.test.plain.sasl.jaas.config": plainJaas, "sasl.server.max.receive.size": "1024"}, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, rec
}

func readFrame(t *testing.T, c net.Conn) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(c, sz[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	_, err := io.ReadFull(c, b)
	return b, err
}

// expectClosed reads until the server closes the connection.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("connection not closed cleanly: %v", err)
	}
}

func TestRequestBeforeAuthenticationCloses(t *testing.T) {
	c, rec := rawConn(t)
	c.Write(frame(kmsg.NewPtrMetadataRequest(), 1))
	expectClosed(t, c)
	if len(rec.principals) != 0 {
		t.Fatal("a Metadata before authentication reached the handler")
	}
}

func TestHandshakeV0RawTokens(t *testing.T) {
	c, rec := rawConn(t)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	c.Write(frame(hs, 0))
	f, err := readFrame(t, c)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	if err := resp.ReadFrom(f[4:]); err != nil || resp.ErrorCode != 0 || len(resp.SupportedMechanisms) != 1 {
		t.Fatalf("%+v %v", resp, err)
	}
	tok := []byte("\x00alice\x00alice-secret")
	c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(tok))))
	c.Write(tok)
	if f, err := readFrame(t, c); err != nil || len(f) != 0 {
		t.Fatalf("raw token answer %q %v", f, err)
	}
	c.Write(frame(kmsg.NewPtrMetadataRequest(), 1))
	if _, err := readFrame(t, c); err != nil {
		t.Fatal(err)
	}
	if rec.last().String() != "User:alice" {
		t.Fatalf("principal %v", rec.last())
	}
}

func TestOversizedFrameBeforeAuthenticationCloses(t *testing.T) {
	c, _ := rawConn(t)
	// sasl.server.max.receive.size is 1024 here: a bigger frame is
	// refused from its size alone.
	c.Write(binary.BigEndian.AppendUint32(nil, 1<<20))
	expectClosed(t, c)
}

func TestUnsupportedMechanism(t *testing.T) {
	c, _ := rawConn(t)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "GSSAPI"
	c.Write(frame(hs, 1))
	f, err := readFrame(t, c)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = 1
	if err := resp.ReadFrom(f[4:]); err != nil || resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code ||
		len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != "PLAIN" {
		t.Fatalf("%+v %v", resp, err)
	}
	expectClosed(t, c)
}

func TestAuthenticateErrorMessage(t *testing.T) {
	c, _ := rawConn(t)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	c.Write(frame(hs, 1))
	if _, err := readFrame(t, c); err != nil {
		t.Fatal(err)
	}
	ar := kmsg.NewPtrSASLAuthenticateRequest()
	ar.SASLAuthBytes = []byte("\x00alice\x00wrong")
	c.Write(frame(ar, 1))
	f, err := readFrame(t, c)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 1
	if err := resp.ReadFrom(f[4:]); err != nil || resp.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		resp.ErrorMessage == nil || *resp.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("%+v %v", resp, err)
	}
	expectClosed(t, c)
}

// Shutdown does not wait for a client that connected and never
// authenticated.
func TestShutdownWithUnauthenticatedConnection(t *testing.T) {
	ls, err := security.NewListener(security.ListenerConfig{Name: "TEST", SecurityProtocol: "SASL_PLAINTEXT", Props: security.MapProps{
		"sasl.enabled.mechanisms": "PLAIN", "listener.name.test.plain.sasl.jaas.config": plainJaas}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &protocol.Server{Handler: &recorder{}, ListenerName: "TEST", Security: ls.Server}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	c.Write(frame(hs, 1))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := readFrame(t, c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown waited for an unauthenticated connection: %v", err)
	}
}
