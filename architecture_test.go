// Package architecture_test holds no code of the router: it checks, with
// go list, that the module's imports follow the layering ARCHITECTURE.md
// writes down.
package architecture_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/airouter/airouter"

// testkit is the tests' shared helpers: only _test.go files import it.
const testkit = "internal/testkit"

// allowed lists, per package of this module, the packages of this module it
// may import. It is the table in ARCHITECTURE.md; keep the two together.
var allowed = map[string][]string{
	"domain":                        {},
	"eventjson":                     {"domain"},
	"redact":                        {},
	"config":                        {"domain", "redact", "transport/eventlog/streamspec"},
	"projections":                   {"domain"},
	"decisions":                     {"domain", "projections"},
	"transport/eventlog":            {"domain", "eventjson", "redact", "transport/eventlog/streamspec"},
	"transport/eventlog/streamspec": {},
	"transport/proxy":               {"domain", "apierror", "redact"},
	"adminapi":                      {"domain", "projections", "apierror", "redact", "eventjson", "incident"},
	"apierror":                      {},
	"incident":                      {"domain", "projections", "eventjson"},
	"whatif":                        {"domain", "projections"},
	"replicas":                      {"domain"},
	"heapfloor":                     {},
	"sysmon":                        {},
	"internal/testkit":              {},
	"internal/testkit/collector":    {},
	"internal/bareproxy":            {},
	"transport/tracing":             {"redact"},
	"cmd/airouter":                  {"*"},
	"cmd/airbench":                  {"internal/bareproxy"},
	"cmd/stubupstream":              {},
}

// thirdParty lists third-party import prefixes and the only packages that
// may import them outside tests.
var thirdParty = map[string][]string{
	"github.com/nats-io/":                 {"transport/eventlog", "internal/testkit"},
	"github.com/gorilla/mux":              {"adminapi", "transport/proxy", "cmd/airouter"},
	"github.com/prometheus/client_golang": {"adminapi", "transport/proxy", "cmd/airouter"},
	"github.com/prometheus/client_model":  {"adminapi"},
	"go.yaml.in/yaml":                     {"config"},
	"go.opentelemetry.io/":                {"transport/tracing", "internal/testkit/collector"},
	"github.com/benbjohnson/immutable":    {"projections"},
	"golang.org/x/exp/":                   {"cmd/airbench"},
}

type pkg struct {
	path        string
	imports     []string
	testImports []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f",
		"{{.ImportPath}}|{{join .Imports \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 || parts[0] == module {
			continue
		}
		pkgs = append(pkgs, pkg{
			path:        strings.TrimPrefix(parts[0], module+"/"),
			imports:     strings.Fields(parts[1]),
			testImports: strings.Fields(parts[2]),
		})
	}
	return pkgs
}

func own(imp string) (string, bool) {
	if imp == module || !strings.HasPrefix(imp, module+"/") {
		return "", false
	}
	return strings.TrimPrefix(imp, module+"/"), true
}

func permitted(list []string, p string) bool {
	for _, a := range list {
		if a == "*" || a == p {
			return true
		}
	}
	return false
}

// TestLayering fails when an import crosses the layering that
// ARCHITECTURE.md writes down: domain, redact, apierror and streamspec
// import nothing of ours; eventjson and projections only domain; config
// only domain, redact and streamspec; decisions only domain and
// projections; incident only domain, projections and eventjson; the edges
// (transport/*, adminapi) never import each other or config; nats is
// imported only by transport/eventlog, and internal/testkit only by tests.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 3 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		rules, known := allowed[p.path]
		if !known {
			t.Errorf("package %s is not in the layering table of ARCHITECTURE.md and architecture_test.go", p.path)
			continue
		}
		for _, imp := range p.imports {
			if dep, ok := own(imp); ok && !permitted(rules, dep) {
				t.Errorf("%s imports %s, which the layering forbids", p.path, dep)
			}
			if dep, _ := own(imp); dep == testkit || strings.HasPrefix(dep, testkit+"/") {
				t.Errorf("%s imports %s outside its tests; only _test.go files may", p.path, dep)
			}
			for prefix, users := range thirdParty {
				if strings.HasPrefix(imp, prefix) && !permitted(users, p.path) {
					t.Errorf("%s imports %s; only %v may", p.path, imp, users)
				}
			}
		}
		// Tests may reach further (a cmd end-to-end test wires everything),
		// but domain's tests stay free of the rest of the module, and no
		// test outside the log's package and cmd talks to NATS directly.
		for _, imp := range p.testImports {
			if dep, ok := own(imp); ok && p.path == "domain" && dep != "domain" {
				t.Errorf("domain tests import %s", dep)
			}
			if strings.HasPrefix(imp, "github.com/nats-io/") &&
				p.path != "transport/eventlog" && !strings.HasPrefix(p.path, "cmd/") {
				t.Errorf("%s tests import %s; only transport/eventlog and cmd tests may", p.path, imp)
			}
		}
	}
}
