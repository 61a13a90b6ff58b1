package registry

// NextGeneration is metadata.generation after an update of an object whose
// stored generation is old: one more when what the object asks for changed,
// so that controllers, which compare it with status.observedGeneration, know
// there is new work; the same otherwise, so that status and metadata writes
// do not look like new work.
func NextGeneration(old int64, changed bool) int64 {
	if changed {
		return old + 1
	}
	return old
}
