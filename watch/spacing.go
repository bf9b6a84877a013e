package watch

import "time"

// DefaultSpacing is the least time between two batches when Options.Spacing
// is zero. Every batch wakes the consumer, which then looks at the files
// again; under a stream of other processes' writes, five milliseconds lets
// several of their changes share one wake-up, and it stays far below the
// time anyone waits for a reply.
const DefaultSpacing = 5 * time.Millisecond

// DefaultStreamSpacing is the spacing of a sustained stream when
// Options.StreamSpacing is zero. Thirty servers on two cores, each doing a
// mix of reads and writes as fast as it can, spent a third less CPU per
// operation at 15 ms than at 5 ms (BenchmarkScale, the thirty-process phase;
// 25 or 40 ms saved no more), and a waiter woken in such a stream still
// hears within the 20 ms its wake-up is held to at p99.
const DefaultStreamSpacing = 15 * time.Millisecond

// streamAfter is how many hold-offs in a row must each gather changes before
// a stream counts as sustained. A message between two agents makes a few
// batches and a quiet spell, so it never gets that far; a team writing
// without pause does within a few spacings.
const streamAfter = 4

// spacingBurst is how many batches may go out one right after the other once
// the Watcher has been quiet for that many spacings. One operation of a
// writer often changes a few files, a few fsyncs apart, more than a debounce
// period in all (a message: a delivery record, two mailboxes, a
// conversation). Each of its batches must wake its waiters at once; only a
// longer stream is held to one batch per spacing.
const spacingBurst = 4

// spacer decides when the next batch may be delivered: at most spacingBurst
// at once, and one per every after that (a token bucket, kept as the time
// at which it would be full again). Times are passed in, so the rule can be
// tested without a clock.
type spacer struct {
	every time.Duration // zero or less: no spacing
	full  time.Time     // when the allowance is whole again; zero when it is whole
}

// next returns the earliest time from now on at which a batch may be
// delivered.
func (s *spacer) next(now time.Time) time.Time {
	if s.every <= 0 {
		return now
	}
	if at := s.full.Add(-(spacingBurst - 1) * s.every); at.After(now) {
		return at
	}
	return now
}

// took records a batch delivered at now.
func (s *spacer) took(now time.Time) {
	if s.every <= 0 {
		return
	}
	if s.full.Before(now) {
		s.full = now
	}
	s.full = s.full.Add(s.every)
}

// respace changes the spacing at now, keeping the batches the allowance lacks:
// the time until it is whole again is scaled to the new spacing.
func (s *spacer) respace(every time.Duration, now time.Time) {
	old := s.every
	if every == old {
		return
	}
	if rest := s.full.Sub(now); rest > 0 && old > 0 && every > 0 {
		s.full = now.Add(time.Duration(float64(rest) * float64(every) / float64(old)))
	}
	s.every = every
}
