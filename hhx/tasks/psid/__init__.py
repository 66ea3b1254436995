"""PSID task builders: wealth, renter-to-owner, earnings (panels, `common`) and the job-loss
event tasks (household displacement layers, `events`)."""
