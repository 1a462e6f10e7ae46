package metadatacache

import (
	"fmt"
	"reflect"
	"testing"
)

// schemaRecord and schemaField are the shapes of records_schema_gen_test.go,
// which internal/gen writes from records.schema.
type schemaRecord struct {
	Key      int16
	Name     string
	Min, Max int16
	Fields   []schemaField
}

type schemaField struct {
	Go       string // Go field name
	Type     string // schema type: int32, []int32, []BrokerEndpoint, ...
	Elem     string // array element type, a struct's Go name for struct arrays
	Min      int16  // first version with the field
	Tag      int    // -1: not tagged
	Nullable bool
	Default  string
}

func schemaOf(key int16) schemaRecord {
	for _, r := range schemaRecords {
		if r.Key == key {
			return r
		}
	}
	panic(fmt.Sprintf("no schema for apiKey %d", key))
}

var testUnknownTags = []TaggedField{{Tag: 90, Data: []byte{1, 2}}, {Tag: 91, Data: nil}}

// populated returns a record of every key with every field of version v set
// to a value other than its default, and unknown tags on the record and on
// the first element of every struct array.
func populated(key, v int16) Record {
	r := NewRecord(key)
	r.SetVersion(v)
	setFields(reflect.ValueOf(r).Elem(), schemaOf(key).Fields, v, 0)
	reflect.ValueOf(r).Elem().FieldByName("UnknownTags").Set(reflect.ValueOf(cloneTags(testUnknownTags)))
	return r
}

// setFields sets every field of struct value s present at version v; seed
// varies the values between array elements.
func setFields(s reflect.Value, fields []schemaField, v int16, seed int) {
	for _, f := range fields {
		if f.Min > v {
			continue
		}
		fv := s.FieldByName(f.Go)
		if !fv.IsValid() {
			panic("no Go field " + f.Go)
		}
		fv.Set(nonDefaultValue(fv.Type(), f, v, seed))
	}
}

func nonDefaultValue(t reflect.Type, f schemaField, v int16, seed int) reflect.Value {
	n := int64(seed + 7)
	switch f.Type {
	case "bool":
		return reflect.ValueOf(f.Default != "true")
	case "int8":
		return reflect.ValueOf(int8(n))
	case "int16":
		return reflect.ValueOf(int16(n * 3))
	case "int32":
		return reflect.ValueOf(int32(n * 100003))
	case "int64":
		return reflect.ValueOf(n << 40)
	case "uint16":
		return reflect.ValueOf(uint16(9092 + n))
	case "float64":
		return reflect.ValueOf(float64(n) + 0.5)
	case "uuid":
		return reflect.ValueOf(uuidN(byte(n)))
	case "bytes":
		return reflect.ValueOf([]byte{byte(n), 2, 3})
	case "string":
		s := fmt.Sprintf("%s-%d", f.Go, seed)
		if f.Nullable {
			return reflect.ValueOf(&s)
		}
		return reflect.ValueOf(s)
	case "[]int32":
		return reflect.ValueOf([]int32{int32(n), 2, 3})
	case "[]string":
		return reflect.ValueOf([]string{"a", fmt.Sprint(seed)})
	case "[]uuid":
		return reflect.ValueOf([][16]byte{uuidN(byte(n)), uuidN(0x40)})
	}
	sf, ok := schemaStructs[f.Elem]
	if !ok {
		panic("unknown schema type " + f.Type)
	}
	out := reflect.MakeSlice(t, 2, 2)
	for i := range 2 {
		setFields(out.Index(i), sf, v, seed+10*(i+1))
	}
	out.Index(0).FieldByName("UnknownTags").Set(reflect.ValueOf(cloneTags(testUnknownTags)))
	return out
}

// Every record of the schema is known to NewRecord with the schema's versions.
func TestSchemaMatchesRegistry(t *testing.T) {
	if len(RecordKeys()) != len(schemaRecords) {
		t.Fatalf("%d keys, %d schema records", len(RecordKeys()), len(schemaRecords))
	}
	for i, key := range RecordKeys() {
		s := schemaRecords[i]
		r := NewRecord(key)
		if s.Key != key || r.Key() != key || r.MaxVersion() != s.Max || r.Version() != s.Max {
			t.Errorf("apiKey %d: %T max %d version %d, schema %+v", key, r, r.MaxVersion(), r.Version(), s)
		}
		if got := reflect.TypeOf(r).Elem().Name(); got != s.Name {
			t.Errorf("apiKey %d: Go type %s, schema %s", key, got, s.Name)
		}
	}
}
