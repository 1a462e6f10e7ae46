package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// versions is a schema version range: "N+" is {N, -1}, "N" is {N, N}.
type versions struct{ min, max int16 }

func (v versions) open() bool { return v.max < 0 }

func (v versions) contains(x int16) bool { return x >= v.min && (v.open() || x <= v.max) }

func (v versions) String() string {
	if v.open() {
		return fmt.Sprintf("v%d+", v.min)
	}
	if v.min == v.max {
		return fmt.Sprintf("v%d", v.min)
	}
	return fmt.Sprintf("v%d-%d", v.min, v.max)
}

func parseVersions(s string) (versions, error) {
	if n, ok := strings.CutSuffix(s, "+"); ok {
		v, err := strconv.ParseInt(n, 10, 16)
		if err != nil || v < 0 {
			return versions{}, fmt.Errorf("bad versions %q", s)
		}
		return versions{int16(v), -1}, nil
	}
	lo, hi, found := strings.Cut(s, "-")
	a, err := strconv.ParseInt(lo, 10, 16)
	if err != nil || a < 0 {
		return versions{}, fmt.Errorf("bad versions %q", s)
	}
	b := a
	if found {
		if b, err = strconv.ParseInt(hi, 10, 16); err != nil || b < a {
			return versions{}, fmt.Errorf("bad versions %q", s)
		}
	}
	return versions{int16(a), int16(b)}, nil
}

// field is one field of a record or struct.
type field struct {
	Name   string // Kafka's name
	GoName string
	Type   string // "int32", "[]int32", "[]BrokerEndpoint", ...
	Ver    versions
	Tag    int // -1: not tagged
	Null   *versions
	Def    string // "" = the type's zero value
	Doc    string
	Line   int
}

func (f *field) tagged() bool { return f.Tag >= 0 }

// elem returns the element type of an array field ("" if not an array).
func (f *field) elem() string {
	e, _ := strings.CutPrefix(f.Type, "[]")
	if e == f.Type {
		return ""
	}
	return e
}

type structDef struct {
	Name   string
	Fields []*field
	File   string
}

type recordDef struct {
	Name   string
	Key    int16
	Ver    versions // validVersions (closed)
	Doc    []string
	Fields []*field
	File   string
}

// KeyName is the apiKey constant: KeyTopic for TopicRecord.
func (r *recordDef) KeyName() string { return "Key" + strings.TrimSuffix(r.Name, "Record") }

type schema struct {
	Records []*recordDef
	Structs map[string]*structDef
	Aliases [][2]string // alias name, struct name
	Order   []string    // struct names in declaration order
	Files   []string    // output files in declaration order
}

var scalarTypes = map[string]bool{
	"bool": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint16": true, "float64": true, "string": true, "bytes": true, "uuid": true,
}

// goName spells Kafka's Id as ID: BrokerId -> BrokerID, Id -> ID.
func goName(kafka string) string {
	var b strings.Builder
	for i := 0; i < len(kafka); i++ {
		if strings.HasPrefix(kafka[i:], "Id") && (i+2 == len(kafka) || kafka[i+2] >= 'A' && kafka[i+2] <= 'Z' || kafka[i+2] == 's') &&
			(i == 0 || kafka[i-1] >= 'a' && kafka[i-1] <= 'z') {
			b.WriteString("ID")
			i++
			continue
		}
		b.WriteByte(kafka[i])
	}
	return b.String()
}

func parseSchema(r io.Reader) (*schema, error) {
	s := &schema{Structs: map[string]*structDef{}}
	sc := bufio.NewScanner(r)
	file := ""
	var (
		curRec    *recordDef
		curStruct *structDef
	)
	line := 0
	errf := func(format string, args ...any) error {
		return fmt.Errorf("line %d: "+format, append([]any{line}, args...)...)
	}
	for sc.Scan() {
		line++
		text := sc.Text()
		body, comment, _ := strings.Cut(text, "#")
		body = strings.TrimSpace(body)
		comment = strings.TrimSpace(comment)
		if body == "" {
			continue
		}
		words := strings.Fields(body)
		inBlock := curRec != nil || curStruct != nil
		switch {
		case !inBlock && words[0] == "file":
			if len(words) != 2 || !strings.HasSuffix(words[1], "_gen.go") {
				return nil, errf("file needs one name ending in _gen.go")
			}
			file = words[1]
			s.Files = append(s.Files, file)
		case !inBlock && words[0] == "struct":
			if len(words) != 2 || file == "" {
				return nil, errf("struct needs a name (and a file before it)")
			}
			if s.Structs[words[1]] != nil {
				return nil, errf("struct %s declared twice", words[1])
			}
			curStruct = &structDef{Name: words[1], File: file}
		case !inBlock && words[0] == "alias":
			if len(words) != 3 || s.Structs[words[2]] == nil {
				return nil, errf("alias <name> <declared struct>")
			}
			s.Aliases = append(s.Aliases, [2]string{words[1], words[2]})
		case !inBlock && words[0] == "record":
			if len(words) != 4 || file == "" {
				return nil, errf("record <Name> <apiKey> <versions> (after a file)")
			}
			key, err := strconv.ParseInt(words[2], 10, 16)
			if err != nil {
				return nil, errf("bad apiKey %q", words[2])
			}
			v, err := parseVersions(words[3])
			if err != nil || v.open() {
				return nil, errf("record versions must be closed: %q", words[3])
			}
			if !strings.HasSuffix(words[1], "Record") {
				return nil, errf("record names end in Record")
			}
			curRec = &recordDef{Name: words[1], Key: int16(key), Ver: v, File: file}
		case inBlock && words[0] == "end":
			if curRec != nil {
				s.Records = append(s.Records, curRec)
				curRec = nil
			} else {
				s.Structs[curStruct.Name] = curStruct
				s.Order = append(s.Order, curStruct.Name)
				curStruct = nil
			}
		case curRec != nil && words[0] == ":":
			curRec.Doc = append(curRec.Doc, strings.TrimSpace(strings.TrimPrefix(body, ":")))
		case inBlock:
			f, err := parseField(words)
			if err != nil {
				return nil, errf("%v", err)
			}
			f.Doc, f.Line = comment, line
			if curRec != nil {
				curRec.Fields = append(curRec.Fields, f)
			} else {
				curStruct.Fields = append(curStruct.Fields, f)
			}
		default:
			return nil, errf("unexpected %q", words[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if curRec != nil || curStruct != nil {
		return nil, fmt.Errorf("missing end at end of file")
	}
	return s, s.check()
}

func parseField(words []string) (*field, error) {
	if len(words) < 3 {
		return nil, fmt.Errorf("a field is <Name> <type> <versions> [attributes]")
	}
	f := &field{Name: words[0], GoName: goName(words[0]), Type: words[1], Tag: -1}
	v, err := parseVersions(words[2])
	if err != nil {
		return nil, err
	}
	f.Ver = v
	for _, a := range words[3:] {
		k, val, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("bad attribute %q", a)
		}
		switch k {
		case "tag":
			t, err := strconv.Atoi(val)
			if err != nil || t < 0 {
				return nil, fmt.Errorf("bad tag %q", val)
			}
			f.Tag = t
		case "null":
			nv, err := parseVersions(val)
			if err != nil {
				return nil, err
			}
			f.Null = &nv
		case "default":
			f.Def = val
		case "go":
			f.GoName = val
		default:
			return nil, fmt.Errorf("unknown attribute %q", k)
		}
	}
	return f, nil
}

// structType resolves an array element type (a struct or an alias) to its struct.
func (s *schema) structType(name string) *structDef {
	if d := s.Structs[name]; d != nil {
		return d
	}
	for _, a := range s.Aliases {
		if a[0] == name {
			return s.Structs[a[1]]
		}
	}
	return nil
}

func (s *schema) check() error {
	keys := map[int16]string{}
	for _, r := range s.Records {
		if other, dup := keys[r.Key]; dup {
			return fmt.Errorf("%s and %s share apiKey %d", r.Name, other, r.Key)
		}
		keys[r.Key] = r.Name
		if err := s.checkFields(r.Name, r.Fields); err != nil {
			return err
		}
	}
	for _, d := range s.Structs {
		if err := s.checkFields(d.Name, d.Fields); err != nil {
			return err
		}
		for _, f := range d.Fields {
			if f.tagged() {
				return fmt.Errorf("%s.%s: tagged fields in structs are not supported", d.Name, f.Name)
			}
		}
	}
	return nil
}

func (s *schema) checkFields(owner string, fs []*field) error {
	names, tags := map[string]bool{}, map[int]bool{}
	for _, f := range fs {
		where := fmt.Sprintf("line %d: %s.%s", f.Line, owner, f.Name)
		if names[f.GoName] {
			return fmt.Errorf("%s: duplicate field", where)
		}
		names[f.GoName] = true
		if f.GoName == "UnknownTags" {
			return fmt.Errorf("%s: UnknownTags is reserved", where)
		}
		switch e := f.elem(); {
		case e == "":
			if !scalarTypes[f.Type] {
				return fmt.Errorf("%s: unknown type %s", where, f.Type)
			}
		case e == "int32" || e == "string" || e == "uuid":
		case s.structType(e) != nil:
			if f.tagged() {
				return fmt.Errorf("%s: tagged struct arrays are not supported", where)
			}
		default:
			return fmt.Errorf("%s: unknown element type %s", where, e)
		}
		if f.Null != nil {
			nullable := f.elem() != "" || f.Type == "string" || f.Type == "bytes"
			if !nullable {
				return fmt.Errorf("%s: only strings, bytes and arrays are nullable", where)
			}
			if f.Null.min != f.Ver.min || !f.Null.open() || !f.Ver.open() {
				return fmt.Errorf("%s: nullable versions must equal the field's (as in every metadata schema)", where)
			}
		}
		if f.tagged() {
			if tags[f.Tag] {
				return fmt.Errorf("%s: duplicate tag %d", where, f.Tag)
			}
			tags[f.Tag] = true
		}
		if f.Def != "" {
			switch {
			case f.Def == "null":
				if f.Null == nil {
					return fmt.Errorf("%s: default null on a non-nullable field", where)
				}
			case f.Type == "bool":
				if f.Def != "true" && f.Def != "false" {
					return fmt.Errorf("%s: bad bool default %q", where, f.Def)
				}
			case strings.HasPrefix(f.Type, "int"):
				if _, err := strconv.ParseInt(f.Def, 10, 64); err != nil {
					return fmt.Errorf("%s: bad default %q", where, f.Def)
				}
			default:
				return fmt.Errorf("%s: defaults are supported for numbers, bools and null", where)
			}
		}
	}
	return nil
}
