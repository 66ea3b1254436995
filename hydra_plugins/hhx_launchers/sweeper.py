"""hhx's sweeper: Hydra's basic sweeper (the same cells, batches and checks) with the cells of
each batch started longest first (hhx/sweeps/order.py). `hydra.sweeper.order=given` keeps the
grid's order. The default sweeper of every `python -m hhx --multirun` (conf/hydra/sweeper/hhx.yaml).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

log = logging.getLogger(__name__)


class HhxSweeper(BasicSweeper):
    def __init__(self, max_batch_size: int | None = None, params: dict[str, str] | None = None,
                 order: str = "longest_first") -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        from hhx.sweeps.order import order_error

        why = order_error(order)
        if why:
            from hhx.errors import ConfigError

            raise ConfigError(why)
        self.order = order
        self._checked: Sequence[Sequence[str]] | None = None

    def sweep(self, arguments: list[str]) -> Any:
        """`+dry_run=true`: the grid priced at once, no job launched (hhx/sweeps/dryrun.py)."""
        from hhx.sweeps.dryrun import requested, run_dry

        assert self.config is not None
        if requested(self.config):
            return run_dry(self, arguments)
        return super().sweep(arguments)

    def get_job_batch(self) -> Sequence[Sequence[str]]:
        batch = super().get_job_batch()
        if self.order == "given" or len(batch) < 2:
            return batch
        from hhx.sweeps.order import cell_seconds, longest_first, measured_seconds

        assert self.hydra_context is not None and self.config is not None
        loader = self.hydra_context.config_loader
        # Composing every job is Hydra's own check of a batch (validate_batch_is_legal): done
        # here once, its configs also give each cell's time.
        configs = [loader.load_sweep_config(self.config, list(job)) for job in batch]
        measured = measured_seconds(self.config.get("tracking"))
        try:
            seconds = [cell_seconds(cfg, measured) for cfg in configs]
        except Exception as exc:  # an optimisation: a config it cannot read runs in grid order
            log.warning("sweep order: cells left in grid order (%s)", exc)
            seconds = [0.0] * len(batch)
        ordered = [batch[i] for i in longest_first(seconds)]
        self._checked = ordered
        return ordered

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        if self._checked is not None and batch is self._checked:
            self._checked = None  # composed in get_job_batch already
            return
        super().validate_batch_is_legal(batch)
