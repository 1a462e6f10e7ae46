package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kgo-broker/kgo-broker/"

// allowed lists, for each room, the project packages its non-test files may
// import (docs/ARCHITECTURE.md, "Allowed imports").
var allowed = map[string][]string{
	"lockrank":              {},
	"storage/vfs":           {},
	"protocol":              {},
	"config":                {},
	"metadatacache":         {},
	"coordinator":           {},
	"quota":                 {},
	"logging":               {},
	"storage":               {"storage/vfs"},
	"raft":                  {"storage", "storage/vfs", "protocol"},
	"security":              {"protocol"},
	"security/securitytest": {},
	"security/authorizer":   {},
	"controller":            {"raft", "metadatacache", "config", "security", "security/authorizer"},
	"replication":           {"storage", "storage/vfs", "metadatacache", "protocol"},
	"group":                 {"coordinator", "metadatacache", "config", "sharestate"},
	"txn":                   {"coordinator", "metadatacache", "config"},
	"sharestate":            {},
	"sharecoord":            {"coordinator", "metadatacache", "config", "sharestate"},
	"share":                 {"storage", "sharestate"},
}

// everywhere may be imported by every room: the ranked mutexes of
// docs/LOCKING.md.
var everywhere = []string{"lockrank"}

func TestImportsPointDown(t *testing.T) {
	root := ".."
	for room, ok := range allowed {
		okSet := map[string]bool{}
		for _, p := range append(append([]string{}, ok...), everywhere...) {
			okSet[p] = true
		}
		files, err := filepath.Glob(filepath.Join(root, room, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("room %s has no Go files", room)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(path, module) {
					continue
				}
				dep := strings.TrimPrefix(path, module)
				if !okSet[dep] {
					t.Errorf("%s imports %s: %s may import only %v", f, dep, room, ok)
				}
			}
		}
	}
}
