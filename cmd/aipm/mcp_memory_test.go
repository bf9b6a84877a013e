package main

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// A server sets its GC target and soft memory limit unless the environment does.
func TestTuneMemory(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(30))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	tuneMemory(getenv)
	if got := debug.SetGCPercent(30); got != 100 {
		t.Errorf("GC percent = %d, want 100", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != mcpMemoryLimit {
		t.Errorf("memory limit = %d, want %d", got, mcpMemoryLimit)
	}

	env["GOGC"], env["GOMEMLIMIT"] = "30", "1GiB" // the runtime read them at start
	tuneMemory(getenv)
	if got := debug.SetGCPercent(30); got != 30 {
		t.Errorf("with GOGC set: GC percent = %d, want it left alone", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: memory limit = %d, want it left alone", got)
	}
}

// The limit grows with a store whose caches alone come near it.
func TestMemoryLimitFor(t *testing.T) {
	if got := memoryLimitFor(10 << 20); got != mcpMemoryLimit {
		t.Errorf("10 MiB live: limit %d, want the default %d", got, mcpMemoryLimit)
	}
	if got := memoryLimitFor(100 << 20); got != 200<<20 {
		t.Errorf("100 MiB live: limit %d, want 200 MiB", got)
	}
	runtime.GC()
	if liveHeap() == 0 {
		t.Error("no live heap read from runtime/metrics")
	}
}

// The limit follows a live heap that grows: a server whose caches outgrow the default is
// given room instead of a collector that runs without end.
func TestMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	followMemoryLimit(ctx, 10*time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != memoryLimitFor(liveHeap()) {
		t.Fatalf("limit %d, want %d", got, memoryLimitFor(liveHeap()))
	}
	held := make([][]byte, 0, 64)
	for range 64 {
		held = append(held, make([]byte, 1<<20)) // 64 MiB live
	}
	runtime.GC()
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetMemoryLimit(-1) < 2*64<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("limit %d after the live heap grew past 64 MiB", debug.SetMemoryLimit(-1))
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(held)
}
