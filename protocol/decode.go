package protocol

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors returned by DecodeRequest and seen (wrapped) in connection logs. Each
// of them closes the connection, like Kafka's InvalidRequestException, except
// ErrUnsupportedVersion for ApiVersions (KIP-511).
var (
	// ErrInvalidFrameSize: a frame size below 0 or above MaxRequestBytes.
	ErrInvalidFrameSize = errors.New("protocol: invalid request frame size")
	// ErrUnknownAPIKey: a key kmsg does not know or the VersionTable does not serve.
	ErrUnknownAPIKey = errors.New("protocol: unknown or disabled api key")
	// ErrUnsupportedVersion: a version outside the served range.
	ErrUnsupportedVersion = errors.New("protocol: unsupported api version")
	// ErrMalformedRequest: a truncated header or body, or trailing bytes.
	ErrMalformedRequest = errors.New("protocol: malformed request")
)

// Request header field offsets inside a frame (after the 4-byte size).
const (
	apiKeyApiVersions        = 18
	apiKeyControlledShutdown = 7
	minHeaderLen             = 8 // key, version, correlation id
)

// DecodeRequest decodes one request frame, the bytes after the 4-byte size:
//
//	request_api_key      int16
//	request_api_version  int16
//	correlation_id       int32
//	client_id            nullable string, int16 length (never compact; absent
//	                     only for ControlledShutdown v0, header v0)
//	tagged fields        only in header v2, i.e. when the request version is
//	                     flexible (ApiVersions v3+)
//	body                 the kmsg request at that version
//
// versions decides which keys and versions are served; nil means every key
// and version kmsg knows.
//
// The body is decoded with kmsg's UnsafeReadFrom: strings and byte slices in
// the returned Msg alias frame, which the caller must not reuse. Trailing
// bytes after the body are an error (ErrMalformedRequest).
//
// An ApiVersions request with a version outside the served range returns a
// Request with Msg == nil and an error wrapping ErrUnsupportedVersion; its
// body is not parsed (Kafka treats it as v0 and answers per KIP-511). Every
// other error returns a nil Request, except that the header fields that were
// read are still reported when the key is known (for logging).
func DecodeRequest(frame []byte, versions VersionTable) (*Request, error) {
	if versions == nil {
		versions = kmsgVersions{}
	}
	if len(frame) < minHeaderLen {
		return nil, fmt.Errorf("%w: %d byte frame is shorter than a request header", ErrMalformedRequest, len(frame))
	}
	b := kbin.Reader{Src: frame}
	key := b.Int16()
	version := b.Int16()
	corr := b.Int32()

	msg := kmsg.RequestForKey(key)
	if msg == nil {
		return nil, fmt.Errorf("%w: key %d", ErrUnknownAPIKey, key)
	}
	min, max, ok := servedRange(versions, key, msg.MaxVersion())
	if !ok {
		return nil, fmt.Errorf("%w: key %d (%s)", ErrUnknownAPIKey, key, kmsg.NameForKey(key))
	}
	req := &Request{Key: key, Version: version, CorrelationID: corr, Size: len(frame)}
	supported := version >= min && version <= max

	var flexibleHeader bool
	if supported {
		msg.SetVersion(version)
		flexibleHeader = msg.IsFlexible()
	} else if key == apiKeyApiVersions {
		// Kafka picks the header version from the request version even
		// when it does not serve it: ApiVersions v3+ uses header v2.
		flexibleHeader = version >= 3
	} else {
		return req, fmt.Errorf("%w: %s v%d (serving v%d-v%d)", ErrUnsupportedVersion, kmsg.NameForKey(key), version, min, max)
	}

	if !(key == apiKeyControlledShutdown && version == 0) {
		if id := b.UnsafeNullableString(); id != nil {
			req.ClientID = *id
		}
	}
	if flexibleHeader {
		kmsg.SkipTags(&b)
	}
	if err := b.Complete(); err != nil {
		return req, fmt.Errorf("%w: %s v%d header: %v", ErrMalformedRequest, kmsg.NameForKey(key), version, err)
	}
	if !supported {
		return req, fmt.Errorf("%w: %s v%d (serving v%d-v%d)", ErrUnsupportedVersion, kmsg.NameForKey(key), version, min, max)
	}

	body := b.Src
	if err := decodeBody(msg, body); err != nil {
		return req, fmt.Errorf("%w: %s v%d: %v", ErrMalformedRequest, kmsg.NameForKey(key), version, err)
	}
	req.Msg = msg
	return req, nil
}

// errTrailingBytes is reported when a body decodes with bytes to spare.
var errTrailingBytes = errors.New("trailing bytes after the request body")

// decodeBody decodes body into msg (whose version is set) and rejects
// trailing bytes.
//
// kmsg's ReadFrom does not say how many bytes it consumed, so trailing bytes
// are found by decoding once more without the last byte: kmsg reads strictly
// front to back, so if that shorter decode still succeeds the last byte was
// never needed. (Length sanity checks only get stricter on a shorter input,
// and every array element and tag takes at least one byte, so a body that
// needs all its bytes always fails the shorter decode.) Re-encoding and
// comparing lengths would be cheaper on big bodies but wrongly rejects legal
// non-canonical encodings, such as a tagged field sent at its default value.
func decodeBody(msg kmsg.Request, body []byte) error {
	if err := unsafeRead(msg, body); err != nil {
		return err
	}
	if len(body) == 0 {
		return nil
	}
	probe := kmsg.RequestForKey(msg.Key())
	probe.SetVersion(msg.GetVersion())
	if unsafeRead(probe, body[:len(body)-1]) == nil {
		return errTrailingBytes
	}
	return nil
}

// unsafeRead decodes with UnsafeReadFrom (no copies; strings alias src),
// which every generated kmsg message has.
func unsafeRead(m interface{ ReadFrom([]byte) error }, src []byte) error {
	if u, ok := m.(kmsg.UnsafeReadFrom); ok {
		return u.UnsafeReadFrom(src)
	}
	return m.ReadFrom(src)
}
