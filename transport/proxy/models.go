package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
)

// maxModelsBody bounds a proxy credential's model list.
const maxModelsBody = 4 << 20

func hasProxyCredentials(c *conf) bool {
	return slices.ContainsFunc(c.creds, func(c *credState) bool { return c.proxy })
}

// RefreshModels learns the models of every proxy credential from its
// upstream's GET /v1/models and rebuilds the routing table when a list
// changed. A credential whose list cannot be fetched, or comes back empty,
// keeps what it had: until a list is first learned it serves any model.
// Start calls it; it is exported for tests.
func (p *Proxy) RefreshModels(ctx context.Context) error {
	var errs []error
	changed := false
	for _, c := range p.current().creds {
		if !c.proxy {
			continue
		}
		models, err := p.fetchModels(ctx, c)
		if err != nil {
			p.log.Warn("learning models of proxy credential failed", "credential", c.name, "error", err)
			errs = append(errs, err)
			continue
		}
		if len(models) == 0 {
			p.log.Warn("proxy credential listed no models; keeping the previous list", "credential", c.name)
			continue
		}
		p.mu.Lock()
		if old, ok := p.learned[c.name]; !ok || !slices.Equal(old, models) {
			p.learned[c.name] = models
			changed = true
		}
		p.mu.Unlock()
	}
	if changed {
		p.rebuild(nil)
		p.log.Info("proxy credential models learned", "models", len(p.Models()))
	}
	return errors.Join(errs...)
}

// fetchModels reads data[].id from the credential's GET /v1/models. Errors
// name the credential, never its key.
func (p *Proxy) fetchModels(ctx context.Context, c *credState) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.fetchTimeout)
	defer cancel()
	u := c.base
	u.Path += "/v1/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("learning models of proxy credential %q: building request: %w", c.name, err)
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("learning models of proxy credential %q: %w", c.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxModelsBody))
		return nil, fmt.Errorf("learning models of proxy credential %q: upstream answered %d", c.name, resp.StatusCode)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxModelsBody)).Decode(&list); err != nil {
		return nil, fmt.Errorf("learning models of proxy credential %q: decoding the list: %w", c.name, err)
	}
	models := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			models = append(models, m.ID)
		}
	}
	slices.Sort(models)
	return slices.Compact(models), nil
}
