package config

// The file types mirror the YAML document. Every scalar is read as a string,
// so that os.environ/VAR works for numbers, booleans and durations too, and
// an empty value (written "" or resolved from an unset variable) means "use
// the default". The build functions (config.go, server.go, events.go, ...)
// turn them into the typed Config.

type fileConfig struct {
	Server      fileServer        `yaml:"server"`
	Fail2Ban    fileFail2Ban      `yaml:"fail2ban"`
	Credentials []fileCredential  `yaml:"credentials"`
	Models      []fileModel       `yaml:"models"`
	ModelAlias  map[string]string `yaml:"model_alias"`
	Monitoring  fileMonitoring    `yaml:"monitoring"`
	OTel        fileOTel          `yaml:"otel"`
	Events      fileEvents        `yaml:"events"`
	Fallback    fileFallback      `yaml:"fallback"`
	ModelBench  fileModelBench    `yaml:"model_bench"`
	Cooldown    fileCooldown      `yaml:"cooldown"`
}

type fileServer struct {
	Port              string   `yaml:"port"`
	MasterKey         string   `yaml:"master_key"`
	APIKeys           []string `yaml:"api_keys"`
	MaxBodySizeMB     string   `yaml:"max_body_size_mb"`
	RequestTimeout    string   `yaml:"request_timeout"`
	ReadHeaderTimeout string   `yaml:"read_header_timeout"`
	WriteTimeout      string   `yaml:"write_timeout"`
	IdleTimeout       string   `yaml:"idle_timeout"`
	ShutdownDelay     string   `yaml:"shutdown_delay"`
	LoggingLevel      string   `yaml:"logging_level"`
	LoggingFormat     string   `yaml:"logging_format"`
	DefaultModelsRPM  string   `yaml:"default_models_rpm"`
	HeapFloorMB       string   `yaml:"heap_floor_mb"`
}

type fileFail2Ban struct {
	MaxAttempts         string                  `yaml:"max_attempts"`
	BanDuration         string                  `yaml:"ban_duration"`
	ErrorCodes          []string                `yaml:"error_codes"`
	ErrorCodeRules      []fileRule              `yaml:"error_code_rules"`
	CredentialOverrides map[string]fileOverride `yaml:"credential_overrides"`
	Recovery            fileRecovery            `yaml:"recovery"`
	MaxEjectionPercent  string                  `yaml:"max_ejection_percent"`
}

type fileRule struct {
	Code        string `yaml:"code"`
	MaxAttempts string `yaml:"max_attempts"`
	BanDuration string `yaml:"ban_duration"`
	Enforce     string `yaml:"enforce"`
}

type fileOverride struct {
	ErrorCodes     []string   `yaml:"error_codes"`
	ErrorCodeRules []fileRule `yaml:"error_code_rules"`
	Enforce        string     `yaml:"enforce"`
}

type fileCredential struct {
	Name       string      `yaml:"name"`
	Type       string      `yaml:"type"`
	APIKey     string      `yaml:"api_key"`
	BaseURL    string      `yaml:"base_url"`
	RPM        string      `yaml:"rpm"`
	TPM        string      `yaml:"tpm"`
	Weight     string      `yaml:"weight"`
	IsFallback string      `yaml:"is_fallback"`
	Models     []fileModel `yaml:"models"`
}

type fileModel struct {
	Name       string `yaml:"name"`
	Model      string `yaml:"model"`
	Credential string `yaml:"credential"`
	RPM        string `yaml:"rpm"`
	TPM        string `yaml:"tpm"`
	Weight     string `yaml:"weight"`
}

type fileMonitoring struct {
	PrometheusEnabled string `yaml:"prometheus_enabled"`
	PprofListen       string `yaml:"pprof_listen"`
}

type fileEvents struct {
	StoreDir  string `yaml:"store_dir"`
	Storage   string `yaml:"storage"`
	NATSURL   string `yaml:"nats_url"`
	Listen    string `yaml:"listen"`
	MaxAge    string `yaml:"max_age"`
	MaxBytes  string `yaml:"max_bytes"`
	Replicas  string `yaml:"replicas"`
	CredsFile string `yaml:"creds_file"`
	ReplicaID string `yaml:"replica_id"`
	// ServerProcess is a bool: see Events.ServerProcess.
	ServerProcess string `yaml:"server_process"`
}

type fileFallback struct {
	MaxHops             string `yaml:"max_hops"`
	TimeBudget          string `yaml:"time_budget"`
	ExposeDetailHeaders string `yaml:"expose_detail_headers"`
	Panic               string `yaml:"panic"`
}

type fileModelBench struct {
	Failures string `yaml:"failures"`
	Window   string `yaml:"window"`
	Duration string `yaml:"duration"`
}
