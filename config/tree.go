package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/airouter/airouter/domain"
)

// envPrefix marks a value read from the environment: os.environ/VAR.
const envPrefix = "os.environ/"

// maxNodes bounds the nodes aliases expand to (the copies made for *alias
// and merge keys, not the nodes written in the document), so that nested
// aliases cannot make the loader exhaust memory while a large document
// written out plainly (15,000 credentials) still loads.
const maxNodes = 1 << 17

func fieldPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func keyPath(path, key string) string {
	// A key shaped like a credential name is written plainly.
	if domain.ValidCredentialName(key) {
		return fieldPath(path, key)
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// expander copies a parsed document into a plain tree: aliases are replaced
// by copies of their anchors, merge keys (<<) are applied, and a list that
// an alias stands for inside a list is spliced into it, so `- *common_models`
// adds the anchored models to the list it is written in.
type expander struct {
	// nodes counts the nodes copied through aliases; inAlias is how many
	// aliases the node being copied is inside.
	nodes   int
	inAlias int
	active  map[*yaml.Node]bool
}

func (x *expander) copy(n *yaml.Node, path string) (*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		if x.active[n.Alias] {
			return nil, fmt.Errorf("%s: alias *%s refers to a node that contains it", orRoot(path), n.Value)
		}
		x.active[n.Alias] = true
		x.inAlias++
		defer func() {
			delete(x.active, n.Alias)
			x.inAlias--
		}()
		return x.copy(n.Alias, path)
	}
	if x.inAlias > 0 {
		x.nodes++
		if x.nodes > maxNodes {
			return nil, fmt.Errorf("the document expands to more than %d nodes through aliases", maxNodes)
		}
	}
	c := *n
	c.Content = nil
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, item := range n.Content {
			ci, err := x.copy(item, indexPath(path, len(c.Content)))
			if err != nil {
				return nil, err
			}
			if item.Kind == yaml.AliasNode && ci.Kind == yaml.SequenceNode && n.Kind == yaml.SequenceNode {
				c.Content = append(c.Content, ci.Content...)
				continue
			}
			c.Content = append(c.Content, ci)
		}
	case yaml.MappingNode:
		return x.mapping(n, &c, path)
	}
	return &c, nil
}

func (x *expander) mapping(n, c *yaml.Node, path string) (*yaml.Node, error) {
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!!merge") {
			cv, err := x.copy(v, fieldPath(path, "<<"))
			if err != nil {
				return nil, err
			}
			maps := []*yaml.Node{cv}
			if cv.Kind == yaml.SequenceNode {
				maps = cv.Content
			}
			for _, m := range maps {
				if m.Kind != yaml.MappingNode {
					return nil, fmt.Errorf("%s: a merge key (<<) takes a mapping or a list of mappings", fieldPath(path, "<<"))
				}
			}
			merged = append(merged, maps...)
			continue
		}
		ck, err := x.copy(k, path)
		if err != nil {
			return nil, err
		}
		cv, err := x.copy(v, fieldPath(path, k.Value))
		if err != nil {
			return nil, err
		}
		c.Content = append(c.Content, ck, cv)
	}
	// Keys written in the mapping win over merged ones, and an earlier
	// merged mapping wins over a later one.
	for _, m := range merged {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if !hasKey(c, m.Content[i].Value) {
				c.Content = append(c.Content, m.Content[i], m.Content[i+1])
			}
		}
	}
	return c, nil
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

func orRoot(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

// walker checks a plain tree against the file types before it is decoded:
// every key must be known (or one that ignoredKey accepts), every value
// must have the right shape, and no key may repeat.
// It reports each problem with its path, prunes what it reported so that
// decoding cannot fail, and resolves os.environ/VAR in every string value
// and map key: this is the one place environment variables are read.
type walker struct {
	env func(string) (string, bool)
	c   *checker
}

// value checks n against t and reports whether n may be kept.
func (w *walker) value(n *yaml.Node, t reflect.Type, path, schema string) bool {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return true
	}
	switch t.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return w.shape(n, path, "a single value")
		}
		w.resolve(n, path, false)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return w.shape(n, path, "a list")
		}
		for i, item := range n.Content {
			if !w.value(item, t.Elem(), indexPath(path, i), schema+"[]") {
				n.Content[i] = nullNode()
			}
		}
	case reflect.Map, reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return w.shape(n, path, "a mapping")
		}
		w.mapping(n, t, path, schema)
	}
	return true
}

func (w *walker) mapping(n *yaml.Node, t reflect.Type, path, schema string) {
	fields := map[string]reflect.Type{}
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			fields[name] = t.Field(i).Type
		}
	}
	seen := map[string]bool{}
	kept := make([]*yaml.Node, 0, len(n.Content))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.c.add(orRoot(path), "a key must be a single value, not a list or a mapping")
			continue
		}
		var ft reflect.Type
		var p, s string
		if t.Kind() == reflect.Map {
			if !w.resolve(k, path, true) {
				continue
			}
			ft, p, s = t.Elem(), keyPath(path, k.Value), schema+".*"
		} else {
			p, s = fieldPath(path, k.Value), fieldPath(schema, k.Value)
			if k.Value == "" {
				p = keyPath(path, "") // an empty key still names a place
			}
			var ok bool
			if ft, ok = fields[k.Value]; !ok {
				w.unknown(k.Value, p, s)
				continue
			}
		}
		if seen[k.Value] {
			// Reported even under a value of the wrong shape: it is a
			// problem of its own.
			w.c.problems = append(w.c.problems, Problem{Path: p, Message: "duplicate key"})
			continue
		}
		seen[k.Value] = true
		if !w.value(v, ft, p, s) {
			v = nullNode()
		}
		kept = append(kept, k, v)
	}
	n.Content = kept
}

// unknown reports a key the file types do not have, unless ignoredKey
// accepts it (with a warning), or it is a top-level "x-" key that only
// holds anchors.
func (w *walker) unknown(key, path, schema string) {
	if why, ok := ignoredKey(schema); ok {
		w.c.warn(path, "ignored: %s", why)
		return
	}
	if !strings.Contains(schema, ".") && strings.HasPrefix(key, "x-") {
		return
	}
	w.c.add(path, "unknown key")
}

// shape reports a value of the wrong kind; the caller replaces it by null.
func (w *walker) shape(n *yaml.Node, path, want string) bool {
	got := map[yaml.Kind]string{
		yaml.ScalarNode: "a single value", yaml.SequenceNode: "a list", yaml.MappingNode: "a mapping",
	}[n.Kind]
	if path == "" {
		w.c.add("", "the document must be a mapping of sections, not %s", got)
	} else {
		w.c.add(path, "must be %s, not %s", want, got)
	}
	w.c.bad = append(w.c.bad, path)
	return false
}

// resolve replaces an os.environ/VAR scalar by the variable's value. An
// unset or empty variable gives "" (recorded, so that a required value
// names it and an optional one takes its default); for a map key it is a
// problem, and resolve returns false.
func (w *walker) resolve(n *yaml.Node, path string, key bool) bool {
	if !strings.HasPrefix(n.Value, envPrefix) {
		return true
	}
	name := strings.TrimPrefix(n.Value, envPrefix)
	if name == "" {
		w.c.add(path, "%q names no environment variable", n.Value)
		n.Value = ""
		return !key
	}
	val, ok := w.env(name)
	if key {
		if !ok || val == "" {
			w.c.add(path, "the key os.environ/%s is not set", name)
			return false
		}
	} else {
		w.c.fromEnv[path] = name
		if !ok || val == "" {
			w.c.unset[path] = name
			val = ""
		}
	}
	n.Value, n.Tag, n.Style = val, "!!str", 0
	return true
}

func nullNode() *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""} }
