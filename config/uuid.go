package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
)

// UUID is Kafka's Uuid (org.apache.kafka.common.Uuid): 16 bytes, written as
// unpadded URL-safe base64 (22 characters).
type UUID [16]byte

// Reserved Uuids: ZERO_UUID (all zero, "no id") and ONE_UUID (the metadata topic).
var (
	ZeroUUID = UUID{}
	OneUUID  = UUID{15: 1}
)

func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// IsZero reports whether u is ZERO_UUID.
func (u UUID) IsZero() bool { return u == ZeroUUID }

// RandomUUID returns a Uuid as Kafka's Uuid.randomUuid does: 16 random bytes, never
// a reserved Uuid (zero or one) and never one whose string starts with '-'.
func RandomUUID() UUID {
	for {
		var u UUID
		if _, err := rand.Read(u[:]); err != nil {
			panic("config: crypto/rand: " + err.Error())
		}
		// Kafka builds it from a type-4 java.util.UUID.
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if u != ZeroUUID && u != OneUUID && u.String()[0] != '-' {
			return u
		}
	}
}

// ErrInvalidUUID is wrapped by ParseUUID errors.
var ErrInvalidUUID = errors.New("invalid Uuid")

// ParseUUID parses Kafka's Uuid string form, as Uuid.fromString: unpadded URL-safe
// base64 of exactly 16 bytes.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) > 24 {
		return u, fmt.Errorf("%w: input string with prefix `%s` is too long to be decoded as a base64 UUID", ErrInvalidUUID, s[:24])
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		// Java's URL decoder also accepts padding.
		if b2, err2 := base64.URLEncoding.DecodeString(s); err2 == nil {
			b, err = b2, nil
		}
	}
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("%w: input string `%s` decoded as %d bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID", ErrInvalidUUID, s, len(b))
	}
	copy(u[:], b)
	return u, nil
}
