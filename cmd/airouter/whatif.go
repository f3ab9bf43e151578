package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/incident"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/whatif"
)

// runWhatif folds a window of the log as recorded and under the ban policy
// of another config file, and prints the bans that would have changed.
//
//	airouter whatif -policy NEW.yaml -config FILE [-since T] [-until T] [-format text|json]
//	airouter whatif -policy NEW.yaml -file incident.jsonl
func runWhatif(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newLogFlags("whatif", logFlagsFor{file: true, window: true}, stderr,
		"usage: airouter whatif -policy NEW.yaml (-config FILE | -nats URL | -file F) [-since T] [-until T] [-format text|json]")
	policyFile := fs.String("policy", "", "the config `FILE` whose ban policy (its fail2ban, model_bench and cooldown sections) is proposed; the rest of it is ignored")
	format := fs.String("format", "text", "`text` for a person, json for a machine")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("-format %q: want text or json", *format)
	}
	if *policyFile == "" {
		return errors.New("whatif: -policy FILE is required: the config file whose ban policy to weigh")
	}
	policy, err := config.LoadPolicy(*policyFile)
	if err != nil {
		return err
	}
	src, cfg, filter, err := fs.open(ctx, time.Now(), stderr)
	if err != nil {
		return err
	}
	defer src.close()
	res, err := weigh(ctx, src.log, cfg, policy, filter)
	if err != nil {
		return err
	}
	if *format == "json" {
		return res.WriteJSON(stdout)
	}
	return res.WriteText(stdout)
}

// weigh runs whatif over the window of l: the state as recorded just
// before the window (folded from a checkpoint, as replay -at does), then
// the window's events up to the first stamped after its end.
func weigh(ctx context.Context, l *incident.Log, cfg *config.Config, policy domain.BanPolicy, filter incident.Filter) (whatif.Result, error) {
	start := projections.NewState()
	if !filter.Since.IsZero() {
		var err error
		if start, _, err = incident.StateAt(ctx, l, filter.Since.Add(-time.Nanosecond), true); err != nil {
			return whatif.Result{}, err
		}
	}
	opt := whatif.Options{Policy: policy, From: filter.Since, Until: filter.Until}
	if cfg != nil {
		opt.Candidates = func(model string) []string {
			var names []string
			for _, t := range cfg.Targets(model) {
				names = append(names, t.Credential)
			}
			return names
		}
	}
	run, err := whatif.New(opt, start)
	if err != nil {
		return whatif.Result{}, err
	}
	err = l.WalkTo(ctx, start.Pos().ResumeSeq(), filter.Until, func(ev domain.Event) error {
		run.Add(ev)
		return nil
	})
	return run.Result(), err
}
