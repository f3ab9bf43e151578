package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

const deployDir = "../../deploy"

// envRef finds the os.environ/VAR values of a config.
var envRef = regexp.MustCompile(`os\.environ/([A-Za-z_][A-Za-z0-9_]*)`)

// deployEnv is a value for each variable the deploy configs read: what
// the script, compose or the Secret would set.
func deployEnv(name string) string {
	switch name {
	case "AIROUTER_PORT":
		return "18080"
	case "AIROUTER_NATS_URL":
		return "nats://127.0.0.1:14222,nats://127.0.0.1:14223,nats://127.0.0.1:14224"
	case "AIROUTER_UPSTREAM_URL":
		return "http://127.0.0.1:18090"
	}
	return "sk-deploy-test-" + strings.ToLower(name)
}

// checkDeployConfig runs `airouter check` on the config in data, with
// every variable it reads set, and returns the config and the variables.
func checkDeployConfig(t *testing.T, name string, data []byte) (*config.Config, []string) {
	t.Helper()
	var vars []string
	for _, m := range envRef.FindAllSubmatch(data, -1) {
		if v := string(m[1]); !slices.Contains(vars, v) {
			vars = append(vars, v)
			t.Setenv(v, deployEnv(v))
		}
	}
	path := filepath.Join(t.TempDir(), filepath.Base(name))
	writeFile(t, path, string(data))
	var out bytes.Buffer
	if err := dispatch(context.Background(), []string{"check", "-config", path}, &out, testkit.Writer(t)); err != nil {
		t.Fatalf("airouter check %s: %v", name, err)
	}
	if strings.Contains(out.String(), "warning:") {
		t.Fatalf("airouter check %s warns:\n%s", name, out.String())
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, vars
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, d)
	}
}

// dig walks a decoded YAML value by map keys and list indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func readDeploy(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Every airouter config under deploy/ passes `airouter check` with the
// variables it reads set and no warning.
func TestDeployConfigsPassCheck(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(deployDir, "*", "airouter.yaml"))
	if len(files) < 3 {
		t.Fatalf("found %v, want the docker, compose and local-cluster configs", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkDeployConfig(t, f, data)
		})
	}
}

// The Dockerfile builds a static binary, runs it as a non-root user with
// the store on a volume, and checks health with the binary on /readyz at
// the port of the config it carries.
func TestDockerfile(t *testing.T) {
	df := string(readDeploy(t, "../Dockerfile"))
	for _, want := range []string{"FROM golang:1.26 AS build", "CGO_ENABLED=0", "-X main.version=${VERSION}",
		"FROM gcr.io/distroless/static", "USER 65532:65532", `VOLUME ["/data"]`,
		`CMD ["/airouter", "probe", "-timeout", "3s", "http://127.0.0.1:8080/readyz"]`,
		"COPY deploy/docker/airouter.yaml /etc/airouter/airouter.yaml",
		`CMD ["serve", "-config", "/etc/airouter/airouter.yaml"]`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	cfg, _ := checkDeployConfig(t, "docker/airouter.yaml", readDeploy(t, "docker/airouter.yaml"))
	if cfg.Server.Port != 8080 || cfg.Events.StoreDir != "/data" || !cfg.Events.Embedded() {
		t.Errorf("the image's config: port %d, store %q, embedded %v; the Dockerfile expects 8080 and /data",
			cfg.Server.Port, cfg.Events.StoreDir, cfg.Events.Embedded())
	}
}

// compose.yaml parses: three NATS servers with JetStream routed to each
// other, two airouter replicas with the variables their config reads and
// the config mounted where the command reads it.
func TestComposeFile(t *testing.T) {
	docs := yamlDocs(t, filepath.Join(deployDir, "compose.yaml"))
	if len(docs) != 1 {
		t.Fatalf("compose.yaml holds %d documents", len(docs))
	}
	services, _ := docs[0]["services"].(map[string]any)
	for _, n := range []string{"nats-1", "nats-2", "nats-3"} {
		cmd := strings.Join(toStrings(dig(services, n, "command")), " ")
		for _, want := range []string{"-js", "--cluster_name airouter",
			"--routes nats://nats-1:6222,nats://nats-2:6222,nats://nats-3:6222"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s command %q lacks %q", n, cmd, want)
			}
		}
	}
	_, vars := checkDeployConfig(t, "compose/airouter.yaml", readDeploy(t, "compose/airouter.yaml"))
	for _, n := range []string{"airouter-1", "airouter-2"} {
		svc, _ := services[n].(map[string]any)
		if svc == nil {
			t.Fatalf("no service %s", n)
		}
		env, _ := svc["environment"].(map[string]any)
		for _, v := range vars {
			if _, ok := env[v]; !ok {
				t.Errorf("%s does not pass %s, which its config reads", n, v)
			}
		}
		if got := toStrings(svc["volumes"]); !slices.Contains(got, "./compose/airouter.yaml:/etc/airouter/airouter.yaml:ro") {
			t.Errorf("%s mounts %v", n, got)
		}
		if got := toStrings(svc["command"]); !slices.Equal(got, []string{"serve", "-config", "/etc/airouter/airouter.yaml"}) {
			t.Errorf("%s runs %v", n, got)
		}
	}
}

// The Kubernetes manifests parse; the ConfigMap's config passes check,
// the Secret holds every variable it reads, and the Deployment probes
// /livez and /readyz on the config's port and mounts the config where its
// command reads it.
func TestKubernetesManifests(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(deployDir, "kubernetes", "*.yaml"))
	byKind := map[string]map[string]any{}
	for _, f := range files {
		for _, d := range yamlDocs(t, f) {
			kind, _ := d["kind"].(string)
			if kind == "" || d["apiVersion"] == nil {
				t.Errorf("%s: a document without kind or apiVersion", f)
			}
			if kind != "Kustomization" && dig(d, "metadata", "name") == nil {
				t.Errorf("%s: %s without metadata.name", f, kind)
			}
			byKind[kind] = d
		}
	}
	for _, k := range []string{"ConfigMap", "Secret", "Deployment", "Service", "Kustomization"} {
		if byKind[k] == nil {
			t.Fatalf("no %s under deploy/kubernetes", k)
		}
	}
	data, _ := dig(byKind["ConfigMap"], "data", "airouter.yaml").(string)
	cfg, vars := checkDeployConfig(t, "configmap/airouter.yaml", []byte(data))
	secret, _ := dig(byKind["Secret"], "stringData").(map[string]any)
	for _, v := range vars {
		if _, ok := secret[v]; !ok {
			t.Errorf("the Secret lacks %s, which the config reads", v)
		}
	}
	c := dig(byKind["Deployment"], "spec", "template", "spec", "containers", 0)
	if p := dig(c, "livenessProbe", "httpGet", "path"); p != "/livez" {
		t.Errorf("liveness probe path %v, want /livez", p)
	}
	if p := dig(c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readiness probe path %v, want /readyz", p)
	}
	if p := dig(c, "ports", 0, "containerPort"); p != cfg.Server.Port {
		t.Errorf("containerPort %v, config port %d", p, cfg.Server.Port)
	}
	if got := dig(c, "envFrom", 0, "secretRef", "name"); got != dig(byKind["Secret"], "metadata", "name") {
		t.Errorf("envFrom names Secret %v", got)
	}
	if args := toStrings(dig(c, "args")); !slices.Equal(args, []string{"serve", "-config", "/etc/airouter/airouter.yaml"}) ||
		dig(c, "volumeMounts", 0, "mountPath") != "/etc/airouter" {
		t.Errorf("args %v with the config mounted at %v", args, dig(c, "volumeMounts", 0, "mountPath"))
	}
	if cfg.Events.Embedded() || cfg.Events.Replicas != 3 {
		t.Errorf("the Kubernetes config should use the NATS cluster with 3 replicas: %+v", cfg.Events)
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
