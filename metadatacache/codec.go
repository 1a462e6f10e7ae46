package metadatacache

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Sentinel errors returned (wrapped) by the decoders. Check them with errors.Is.
var (
	// ErrTruncated means the input ended before the record did.
	ErrTruncated = errors.New("metadatacache: truncated record")
	// ErrTrailingBytes means bytes remained after the record was fully read.
	ErrTrailingBytes = errors.New("metadatacache: trailing bytes after record")
	// ErrInvalidField means a field held a value its schema forbids (null in a
	// non-nullable string or array, a string longer than 32767 bytes, a
	// tagged field whose size does not match its content).
	ErrInvalidField = errors.New("metadatacache: invalid field")
	// ErrFrameVersion means the frame version was not 1.
	ErrFrameVersion = errors.New("metadatacache: unsupported metadata record frame version")
	// ErrUnknownRecordType means the apiKey names no record this package knows.
	ErrUnknownRecordType = errors.New("metadatacache: unknown metadata record type")
	// ErrUnsupportedVersion means the record version is outside the record's validVersions.
	ErrUnsupportedVersion = errors.New("metadatacache: unsupported metadata record version")
)

// maxStringLen is the longest string Kafka's generated readers accept
// (Readable.readString: "string field had invalid length").
const maxStringLen = 0x7fff

// Record is one KRaft metadata record: the body of one value in
// __cluster_metadata, without the frame (see EncodeRecord).
//
// A record reads and writes itself at the version set with SetVersion; the
// zero value of every record struct is version 0, the New* constructors set
// the schema's defaults and the newest version this package knows.
type Record interface {
	// Key is the record's apiKey (MetadataRecordType id).
	Key() int16
	// Version is the version AppendTo writes and ReadFrom reads.
	Version() int16
	SetVersion(v int16)
	// MaxVersion is the newest version of this record the package knows.
	MaxVersion() int16
	// AppendTo appends the body at Version(). Fields the version does not
	// have are left out.
	AppendTo(dst []byte) []byte
	// ReadFrom replaces the record with the body in src, read at Version().
	// Fields missing from src (tagged fields, fields of newer versions) get
	// their schema defaults. Truncated input and trailing bytes are errors.
	ReadFrom(src []byte) error
}

// TaggedField is a tagged field the schema of the record's version does not
// know. Decoders keep them and encoders write them back, so records written
// by a newer Kafka survive a round trip.
type TaggedField struct {
	Tag  uint32
	Data []byte
}

// FrameVersion is the only metadata record frame version Kafka writes
// (AbstractApiMessageSerde.DEFAULT_FRAME_VERSION).
const FrameVersion = 1

// EncodeRecord returns the framed record as it is stored as the value of a
// v2 record in __cluster_metadata: unsigned varint frame version (1),
// unsigned varint apiKey, unsigned varint version, then the body.
func EncodeRecord(r Record) []byte {
	return AppendRecord(nil, r)
}

// AppendRecord appends the framed record to dst (see EncodeRecord).
func AppendRecord(dst []byte, r Record) []byte {
	dst = kbin.AppendUvarint(dst, FrameVersion)
	dst = kbin.AppendUvarint(dst, uint32(uint16(r.Key())))
	dst = kbin.AppendUvarint(dst, uint32(uint16(r.Version())))
	return r.AppendTo(dst)
}

// ValidateRecord reports whether r, once encoded, decodes again: Kafka's
// writers refuse what its readers would refuse (a string longer than 32767
// bytes, an unknown version), and AppendTo cannot return an error, so a
// controller should check a record it builds from request data before
// appending it to the metadata log.
func ValidateRecord(r Record) error {
	if err := checkVersion(r, r.Version()); err != nil {
		return err
	}
	_, err := DecodeRecord(EncodeRecord(r))
	return err
}

// DecodeRecord decodes one framed record (see EncodeRecord). It rejects frame
// versions other than 1, unknown apiKeys and versions, truncated input and
// trailing bytes.
func DecodeRecord(b []byte) (Record, error) {
	d := decoder{b: b}
	frame := d.uvarint()
	key := d.uvarint()
	version := d.uvarint()
	if d.err != nil {
		return nil, fmt.Errorf("reading record frame: %w", d.err)
	}
	if frame != FrameVersion {
		return nil, fmt.Errorf("%w %d", ErrFrameVersion, frame)
	}
	if key > 0x7fff {
		return nil, fmt.Errorf("%w: apiKey %d", ErrUnknownRecordType, key)
	}
	r := NewRecord(int16(key))
	if r == nil {
		return nil, fmt.Errorf("%w: apiKey %d", ErrUnknownRecordType, key)
	}
	if version > uint32(r.MaxVersion()) {
		return nil, fmt.Errorf("%w: %T version %d (max %d)", ErrUnsupportedVersion, r, version, r.MaxVersion())
	}
	r.SetVersion(int16(version))
	if err := r.ReadFrom(d.b); err != nil {
		return nil, err
	}
	return r, nil
}

// ---- decoding ----

// decoder reads Kafka's flexible encoding. The first error sticks; every
// read after it returns a zero value. Lengths are checked against the bytes
// left before anything is allocated.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) span(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail(ErrTruncated)
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) int8() int8 {
	s := d.span(1)
	if s == nil {
		return 0
	}
	return int8(s[0])
}

func (d *decoder) bool() bool { return d.int8() != 0 }

func (d *decoder) int16() int16 { return int16(d.uint16()) }

func (d *decoder) uint16() uint16 {
	s := d.span(2)
	if s == nil {
		return 0
	}
	return uint16(s[0])<<8 | uint16(s[1])
}

func (d *decoder) int32() int32 {
	s := d.span(4)
	if s == nil {
		return 0
	}
	return int32(uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3]))
}

func (d *decoder) int64() int64 {
	s := d.span(8)
	if s == nil {
		return 0
	}
	var u uint64
	for _, c := range s {
		u = u<<8 | uint64(c)
	}
	return int64(u)
}

func (d *decoder) float64() float64 {
	return math.Float64frombits(uint64(d.int64()))
}

func (d *decoder) uuid() (u [16]byte) {
	copy(u[:], d.span(16))
	return u
}

func (d *decoder) uvarint() uint32 {
	if d.err != nil {
		return 0
	}
	v, n := kbin.Uvarint(d.b)
	if n <= 0 {
		if n == 0 {
			d.fail(ErrTruncated)
		} else {
			d.fail(fmt.Errorf("%w: unsigned varint overflows 32 bits", ErrInvalidField))
		}
		return 0
	}
	d.b = d.b[n:]
	return v
}

// compactLen reads a compact length (N+1, 0 = null). It returns -1 for null.
func (d *decoder) compactLen() int {
	v := d.uvarint()
	return int(int64(v) - 1)
}

func (d *decoder) string(field string) string {
	s := d.nullableString(field)
	if s == nil {
		if d.err == nil {
			d.fail(fmt.Errorf("%w: non-nullable string %s is null", ErrInvalidField, field))
		}
		return ""
	}
	return *s
}

func (d *decoder) nullableString(field string) *string {
	n := d.compactLen()
	if d.err != nil || n < 0 {
		return nil
	}
	if n > maxStringLen {
		d.fail(fmt.Errorf("%w: string %s has length %d", ErrInvalidField, field, n))
		return nil
	}
	b := d.span(n)
	if d.err != nil {
		return nil
	}
	s := string(b)
	return &s
}

// arrayLen reads a compact array length and checks that n elements of at
// least minSize bytes each fit in what is left. It returns -1 for null; a
// null in a non-nullable array is an error.
func (d *decoder) arrayLen(field string, nullable bool, minSize int) int {
	n := d.compactLen()
	if d.err != nil {
		return 0
	}
	if n < 0 {
		if !nullable {
			d.fail(fmt.Errorf("%w: non-nullable array %s is null", ErrInvalidField, field))
			return 0
		}
		return -1
	}
	if n > len(d.b)/minSize {
		d.fail(ErrTruncated)
		return 0
	}
	return n
}

// int32s reads a compact []int32. Null decodes to nil, empty to a non-nil
// empty slice (so nullable fields keep the difference).
func (d *decoder) int32s(field string, nullable bool) []int32 {
	n := d.arrayLen(field, nullable, 4)
	if d.err != nil || n < 0 {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = d.int32()
	}
	return out
}

func (d *decoder) uuids(field string, nullable bool) [][16]byte {
	n := d.arrayLen(field, nullable, 16)
	if d.err != nil || n < 0 {
		return nil
	}
	out := make([][16]byte, n)
	for i := range out {
		out[i] = d.uuid()
	}
	return out
}

// bytes reads compact bytes. Null decodes to nil (an error unless
// nullable), empty to a non-nil empty slice. The result does not alias the input.
func (d *decoder) bytes(field string, nullable bool) []byte {
	n := d.compactLen()
	if d.err != nil {
		return nil
	}
	if n < 0 {
		if !nullable {
			d.fail(fmt.Errorf("%w: non-nullable bytes %s is null", ErrInvalidField, field))
		}
		return nil
	}
	b := d.span(n)
	if d.err != nil {
		return nil
	}
	return append(make([]byte, 0, n), b...)
}

// strings reads a compact array of non-nullable strings.
func (d *decoder) strings(field string, nullable bool) []string {
	n := d.arrayLen(field, nullable, 1)
	if d.err != nil || n < 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.string(field)
	}
	return out
}

// tags reads a tagged-field section. known is called with a decoder over
// each field's bytes; it returns false for tags it does not know, which are
// kept in the returned slice. A known field must consume its bytes exactly.
func (d *decoder) tags(known func(tag uint32, fd *decoder) bool) []TaggedField {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	// Each tagged field is at least two bytes (tag, size).
	if uint64(n) > uint64(len(d.b)/2) {
		d.fail(ErrTruncated)
		return nil
	}
	var unknown []TaggedField
	for i := uint32(0); i < n && d.err == nil; i++ {
		tag := d.uvarint()
		size := d.uvarint()
		if d.err != nil {
			return nil
		}
		if uint64(size) > uint64(len(d.b)) {
			d.fail(ErrTruncated)
			return nil
		}
		data := d.span(int(size))
		fd := decoder{b: data}
		if known != nil && known(tag, &fd) {
			if fd.err != nil {
				d.fail(fmt.Errorf("tagged field %d: %w", tag, fd.err))
				return nil
			}
			if len(fd.b) != 0 {
				d.fail(fmt.Errorf("%w: tagged field %d has %d bytes left over", ErrInvalidField, tag, len(fd.b)))
				return nil
			}
			continue
		}
		unknown = append(unknown, TaggedField{Tag: tag, Data: append([]byte(nil), data...)})
	}
	return unknown
}

// done returns the decoding error, or ErrTrailingBytes if input remains.
func (d *decoder) done(what string) error {
	if d.err != nil {
		return fmt.Errorf("decoding %s: %w", what, d.err)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("decoding %s: %w (%d)", what, ErrTrailingBytes, len(d.b))
	}
	return nil
}

func checkVersion(r Record, v int16) error {
	if v < 0 || v > r.MaxVersion() {
		return fmt.Errorf("%w: %T version %d (max %d)", ErrUnsupportedVersion, r, v, r.MaxVersion())
	}
	return nil
}

// ---- encoding ----

func appendString(dst []byte, s string) []byte { return kbin.AppendCompactString(dst, s) }

func appendNullableString(dst []byte, s *string) []byte {
	return kbin.AppendCompactNullableString(dst, s)
}

// appendInt32s writes a compact array; nil is written as null only when
// nullable, otherwise as empty.
func appendInt32s(dst []byte, v []int32, nullable bool) []byte {
	if v == nil && nullable {
		return append(dst, 0)
	}
	dst = kbin.AppendCompactArrayLen(dst, len(v))
	for _, x := range v {
		dst = kbin.AppendInt32(dst, x)
	}
	return dst
}

func appendUUIDs(dst []byte, v [][16]byte, nullable bool) []byte {
	if v == nil && nullable {
		return append(dst, 0)
	}
	dst = kbin.AppendCompactArrayLen(dst, len(v))
	for _, x := range v {
		dst = append(dst, x[:]...)
	}
	return dst
}

// appendBytes writes compact bytes; nil is written as null only when nullable.
func appendBytes(dst, v []byte, nullable bool) []byte {
	if v == nil && nullable {
		return append(dst, 0)
	}
	return kbin.AppendCompactBytes(dst, v)
}

// appendStrings writes a compact array of strings; nil is null only when nullable.
func appendStrings(dst []byte, v []string, nullable bool) []byte {
	if v == nil && nullable {
		return append(dst, 0)
	}
	dst = kbin.AppendCompactArrayLen(dst, len(v))
	for _, s := range v {
		dst = appendString(dst, s)
	}
	return dst
}

// tagSet collects the tagged fields of one section, known and unknown, and
// writes them in ascending tag order as Kafka's generated writers do.
type tagSet []TaggedField

func (t *tagSet) add(tag uint32, data []byte) { *t = append(*t, TaggedField{tag, data}) }

func (t tagSet) appendTo(dst []byte, unknown []TaggedField) []byte {
	all := append(t, unknown...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Tag < all[j].Tag })
	dst = kbin.AppendUvarint(dst, uint32(len(all)))
	for _, f := range all {
		dst = kbin.AppendUvarint(dst, f.Tag)
		dst = kbin.AppendUvarint(dst, uint32(len(f.Data)))
		dst = append(dst, f.Data...)
	}
	return dst
}

// appendNoTags writes a tagged-field section with only the unknown fields.
func appendNoTags(dst []byte, unknown []TaggedField) []byte {
	if len(unknown) == 0 {
		return append(dst, 0)
	}
	return tagSet(nil).appendTo(dst, unknown)
}

func cloneTags(t []TaggedField) []TaggedField {
	if t == nil {
		return nil
	}
	out := make([]TaggedField, len(t))
	for i, f := range t {
		out[i] = TaggedField{f.Tag, append([]byte(nil), f.Data...)}
	}
	return out
}
