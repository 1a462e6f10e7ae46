package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runProfiles starts kgo-broker alone with its pprof endpoint
// (KGO_PPROF_ADDR, cmd/kgo-broker/pprof.go), and for each scenario in
// BENCH_PROFILE runs the scenario over and over while a CPU profile is taken,
// with heap allocation profiles before and after. Output: bench/results/profiles/
// <id>-cpu.pb.gz, <id>-allocs-{before,after}.pb.gz and text tops.
func runProfiles(ctx context.Context, s settings, tmp string) error {
	byID := map[string]scenario{}
	s2 := s
	s2.Only = nil
	for _, sc := range scenarios(s2) {
		byID[sc.ID] = sc
	}
	for _, id := range s.Profile {
		if _, ok := byID[id]; !ok {
			var ids []string
			for _, sc := range scenarios(s2) {
				ids = append(ids, sc.ID)
			}
			return fmt.Errorf("unknown scenario %q in BENCH_PROFILE; scenarios: %s", id, strings.Join(ids, " "))
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	pprofAddr := "127.0.0.1:" + strconv.Itoa(port)
	b, err := newBroker(s, kgo, filepath.Join(tmp, "profile-kgo"))
	if err != nil {
		return err
	}
	b.Env = []string{"KGO_PPROF_ADDR=" + pprofAddr}
	if err := b.format(ctx, s); err != nil {
		return err
	}
	if err := b.start(ctx, s); err != nil {
		b.stop()
		return err
	}
	defer b.stop()
	base := "http://" + pprofAddr + "/debug/pprof/"
	if resp, err := http.Get(base); err != nil {
		return fmt.Errorf("kgo-broker's pprof endpoint (KGO_PPROF_ADDR=%s) does not answer: %v", pprofAddr, err)
	} else {
		resp.Body.Close()
	}
	outDir := filepath.Join(s.OutDir, "profiles")
	if d := os.Getenv("BENCH_PROFILE_DIR"); d != "" {
		outDir, _ = filepath.Abs(d)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	dur := 30 * time.Second
	if s.Quick {
		dur = 10 * time.Second
	}
	prepared := map[string]bool{}
	const readRep = 100
	for _, id := range s.Profile {
		sc := byID[id]
		if sc.Source != "" && !prepared[sc.Source] {
			log.Printf("profile %s: preparing %s", id, sc.Source)
			if r := runScenario(ctx, s, byID[sc.Source], readRep, b, nil); !r.OK {
				return fmt.Errorf("preparing %s: %s", sc.Source, r.NA)
			}
			prepared[sc.Source] = true
		}
		if err := get(base+"allocs", filepath.Join(outDir, id+"-allocs-before.pb.gz")); err != nil {
			return err
		}
		log.Printf("profile %s: CPU profile for %v while the scenario runs in a loop", id, dur)
		cpuFile := filepath.Join(outDir, id+"-cpu.pb.gz")
		done := make(chan error, 1)
		go func() { done <- get(fmt.Sprintf("%sprofile?seconds=%d", base, int(dur.Seconds())), cpuFile) }()
		rctx, cancel := context.WithCancel(ctx)
		loopDone := make(chan struct{})
		runs := 0
		var lastErr string
		go func() {
			defer close(loopDone)
			for i := 0; rctx.Err() == nil; i++ {
				rep := readRep
				if sc.Kind == "produce" || sc.Kind == "e2e" {
					rep = 200 + i
				}
				r := runScenario(rctx, s, sc, rep, b, nil)
				if rctx.Err() != nil {
					return
				}
				if !r.OK {
					lastErr = r.NA
					return
				}
				runs++
				if runs <= 3 || runs%50 == 0 {
					logResult(rep, sc, kgo, r)
				}
			}
		}()
		err := <-done
		cancel()
		<-loopDone
		if err != nil {
			return err
		}
		if lastErr != "" {
			return fmt.Errorf("profile %s: %s", id, lastErr)
		}
		if err := get(base+"allocs", filepath.Join(outDir, id+"-allocs-after.pb.gz")); err != nil {
			return err
		}
		bin := s.KgoBin
		tops := []struct {
			file string
			args []string
		}{
			{id + "-cpu-top.txt", []string{"-top", "-nodecount=40", bin, cpuFile}},
			{id + "-cpu-cum.txt", []string{"-top", "-cum", "-nodecount=60", bin, cpuFile}},
			{id + "-alloc-space-top.txt", []string{"-top", "-nodecount=30", "-sample_index=alloc_space",
				"-base", filepath.Join(outDir, id+"-allocs-before.pb.gz"), bin, filepath.Join(outDir, id+"-allocs-after.pb.gz")}},
			{id + "-alloc-objects-top.txt", []string{"-top", "-nodecount=30", "-sample_index=alloc_objects",
				"-base", filepath.Join(outDir, id+"-allocs-before.pb.gz"), bin, filepath.Join(outDir, id+"-allocs-after.pb.gz")}},
		}
		for _, t := range tops {
			out, err := exec.Command("go", append([]string{"tool", "pprof"}, t.args...)...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("go tool pprof %v: %v\n%s", t.args, err, out)
			}
			hdr := fmt.Sprintf("# kgo-broker profile, scenario %s (%s), %d complete runs in %v, %s\n# go tool pprof %s\n",
				id, sc.Title, runs, dur, time.Now().UTC().Format(time.RFC3339), strings.Join(t.args, " "))
			if err := os.WriteFile(filepath.Join(outDir, t.file), append([]byte(hdr), out...), 0o644); err != nil {
				return err
			}
		}
		log.Printf("profile %s: %d runs; wrote %s/%s-*", id, runs, outDir, id)
	}
	return nil
}

func get(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
