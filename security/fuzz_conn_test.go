package security_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security"
)

// chanListener hands net.Pipe ends to a Server.
type chanListener struct {
	ch     chan net.Conn
	closed chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error {
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
	return nil
}
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{} }

func frame(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = append(b, 0, 1, 'c')
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// FuzzSASLConnection feeds arbitrary bytes after a valid SaslHandshake (and
// on their own) to a SASL_PLAINTEXT listener's authentication phase: nothing
// panics, nothing allocates past sasl.server.max.receive.size, and the
// connection ends.
func FuzzSASLConnection(f *testing.F) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	f.Add(append(frame(hs, 1), frame(auth, 2)...))
	f.Add(append(frame(hs, 0), []byte("\x00\x00\x00\x13\x00alice\x00alice-secret")...))
	f.Add(frame(kmsg.NewPtrApiVersionsRequest(), 3))
	f.Add([]byte("\x7f\xff\xff\xff"))
	ls, err := security.NewListener(security.ListenerConfig{Name: "F", SecurityProtocol: "SASL_PLAINTEXT", Props: security.MapProps{
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256", "sasl.server.max.receive.size": "4096",
		"listener.name.f.plain.sasl.jaas.config":         plainJaas,
		"listener.name.f.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
	}})
	if err != nil {
		f.Fatal(err)
	}
	l := &chanListener{ch: make(chan net.Conn), closed: make(chan struct{})}
	srv := &protocol.Server{Handler: &recorder{}, ListenerName: "F", Security: ls.Server, IdleTimeout: time.Second}
	go srv.Serve(l)
	f.Cleanup(func() { srv.Close() })
	f.Fuzz(func(t *testing.T, in []byte) {
		c, s := net.Pipe()
		l.ch <- s
		c.SetDeadline(time.Now().Add(3 * time.Second))
		done := make(chan struct{})
		go func() {
			io.Copy(io.Discard, c) // the server's answers
			close(done)
		}()
		c.Write(in)
		c.Close()
		<-done
	})
}
