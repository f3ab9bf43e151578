// Command stubupstream is a stand-in OpenAI-compatible upstream for
// trying airouter without a provider: deploy/local-cluster.sh starts it
// under the local replicas. It answers POST /v1/chat/completions with a
// fixed completion (its usage counts three prompt tokens and one
// completion token) and GET /v1/models with the one model it names. It
// listens on 127.0.0.1 only.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	port := flag.Int("port", 18090, "listen on 127.0.0.1:`PORT`")
	model := flag.String("model", "gpt-local", "the model `ID` GET /v1/models lists")
	flag.Parse()
	if *port < 1 || *port > 65535 {
		fmt.Fprintf(os.Stderr, "stubupstream: -port %d is out of range 1..65535\n", *port)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stubupstream:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: handler(*model), ReadHeaderTimeout: 10 * time.Second}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; _ = srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "stubupstream:", err)
		os.Exit(1)
	}
}

func handler(model string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list",
			"data": []map[string]any{{"id": model, "object": "model", "owned_by": "stubupstream"}}})
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "the body is not JSON: "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-stub", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]string{"role": "assistant", "content": "hello from stubupstream"}}},
			"usage": map[string]int{"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
		})
	})
	return mux
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "server_error"}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
