// Package archtest holds no code: its tests check that project packages
// import only the rooms below them, as docs/ARCHITECTURE.md draws them, and
// that product code declares no sync.Mutex or sync.RWMutex, only lockrank's
// (docs/LOCKING.md).
package archtest
