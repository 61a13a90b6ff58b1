package etcd

import (
	"context"
	"log/slog"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore hands etcd's zap entries to a slog.Logger, so that the embedded
// server logs like the rest of the process. Once stopping is set it drops
// everything: a clean shutdown makes etcd log its closed listeners as errors.
type slogCore struct {
	log      *slog.Logger
	level    zapcore.Level
	fields   []zapcore.Field
	stopping *atomic.Bool
}

func newSlogLogger(log *slog.Logger, level zapcore.Level, stopping *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{log: log, level: level, stopping: stopping})
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.level && !c.stopping.Load() }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	cp := *c
	cp.fields = append(append([]zapcore.Field(nil), c.fields...), fields...)
	return &cp
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	attrs = append(attrs, slog.String("component", "etcd"))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	c.log.LogAttrs(context.Background(), slogLevel(e.Level), e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	case l >= zapcore.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
