package main

func (a *app) cmdDoctor(args []string) error {
	fs := newFlags(a, "doctor")
	if _, err := fs.parse(args, 0, 0, ""); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	probs, err := s.Check()
	if err != nil {
		return err
	}
	cmdProbs, err := agentCommandProblems(s)
	if err != nil {
		return err
	}
	probs = append(probs, cmdProbs...)
	if fs.json {
		if err := a.printJSON(probs); err != nil {
			return err
		}
	} else {
		for _, p := range probs {
			a.printf("%s\n", p)
		}
		if len(probs) == 0 {
			a.printf("ok: every file under %s and every agent command checked, no problems\n", s.Rel(s.Dir()))
		}
	}
	if len(probs) > 0 {
		return exitError(1)
	}
	return nil
}
