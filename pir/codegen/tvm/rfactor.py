"""Reductions in vector lanes: the rfactor steps of the CPU schedule (schedule.py).

A reduction's innermost loop is split into chunks x lanes and the lanes loop rfactored, so
that ``lanes`` partial results accumulate side by side in one vector register and a short
final reduction adds them; the schedule then vectorises the partial-result block's lanes
loop (``vectorize_lanes``).  Three forms, tried in turn: one reduce loop whose static
extent the lanes divide (``rfactor``, with several accumulators for long rows), a short
static innermost loop under others (``rfactor_short``: a global pool's 7 x 7 window), and
the innermost of several reduce loops (``rfactor_inner``: a quantization's global min and
max).  Every step is optional: on a failure the schedule is as it was.
"""

from __future__ import annotations

from tvm import tirx
from tvm.s_tir import ScheduleError

__all__ = ["Rfactors"]


class Rfactors:
    """The rfactor steps, mixed into the schedule's ``_Scheduler``: they use its ``sch``,
    ``store``, ``lanes``, ``partials`` (the partial-result buffers and their accumulators x
    lanes) and ``folds``, and its ``vectorize_lanes``."""

    def vectorize_reduction(self, block, skip: int) -> None:
        rf = self.rfactor(block)
        if rf is None:
            rf = self.rfactor_short(block)
        if rf is None:
            rf = self.rfactor_inner(block)
        if rf is not None:
            self.vectorize_lanes(rf, skip)

    def rfactor_short(self, block):
        """Rfactor the innermost reduce loop of ``block`` whole, when it is static and no
        longer than a vector (2 to ``lanes``) and an outer reduce loop remains: the rows of
        a global pool's 7 x 7 window, say, are added as vectors of 7, one load each, and
        the 7 lanes once at the end, where each element was one link of a chain of 49
        scalar adds ([1, 2048, 7, 7]: 0.057 -> 0.042 ms, the call's numpy round trip
        included).  Returns the partial-result block, or None (the schedule as it was: on
        a failure ``self.sch`` is a saved copy, which callers must read again)."""
        sch = self.sch
        loops = sch.get_loops(block)
        iters = sch.get(block).iter_vars
        n_reduce = sum(iv.iter_type == tirx.IterVar.CommReduce for iv in iters)
        # (not a reduction of everything to a scalar: TVM's rfactor fails an internal check
        # on a 0-d result that another block reads, and a pool has its channels anyway)
        if n_reduce < 2 or n_reduce == len(iters) or self.store(block) is None:
            return None
        extent = sch.get(loops[-1]).extent
        if not isinstance(extent, tirx.IntImm) or not 2 <= extent.value <= self.lanes(block):
            return None
        saved = sch.copy()
        try:
            rf = sch.rfactor(loops[-1], factor_axis=0)
        except Exception:  # noqa: BLE001 - TVM's internal errors too: scheduling is optional
            self.sch = saved
            return None
        self.partials.append((self.store(rf).buffer, (1, int(extent.value))))
        return rf

    def rfactor_inner(self, block):
        """A reduction over several axes whose innermost is static and a multiple of the
        lanes: that loop split into chunks x lanes and the lanes rfactored, so that partial
        results accumulate in one vector.  The global min and max a DynamicQuantizeLinear
        takes of a [batch, seq, seq, 512] activation (Tashkeel's attention) were one scalar
        chain each, 12.5 of the model's 23 ms.  Returns the partial-result block, or None
        (``self.sch`` as it was, a saved copy on a failure: callers must read it again)."""
        sch = self.sch
        loops = sch.get_loops(block)
        n_reduce = sum(iv.iter_type == tirx.IterVar.CommReduce for iv in sch.get(block).iter_vars)
        if n_reduce < 2 or not loops or self.store(block) is None:
            return None
        extent, lanes = sch.get(loops[-1]).extent, self.lanes(block)
        if not isinstance(extent, tirx.IntImm) or extent.value % lanes or lanes < 2:
            return None
        saved = sch.copy()
        try:
            # TVM's rfactor fails an internal check (block_realize == old_block_realize_)
            # when a block without loops reads the result (the scale a quantization computes
            # from the min and max): a unit loop around each such block avoids it
            for other in sch.get_child_blocks(sch.get_sblock("root")):
                if not sch.get_loops(other):
                    sch.add_unit_loop(other)
            _, ki = sch.split(loops[-1], [None, lanes])
            rf = sch.rfactor(ki, factor_axis=0)
        except Exception:  # noqa: BLE001 - TVM's internal errors too: scheduling is optional
            self.sch = saved
            return None
        self.partials.append((self.store(rf).buffer, (1, lanes)))
        return rf

    def rfactor(self, block, accumulators: int = 1, lanes: int | None = None):
        """Split the one reduce loop of ``block`` into chunks x lanes and rfactor the lanes:
        ``lanes`` partial results accumulate side by side (one vector register), and a short
        final reduction adds the lanes.  Only for a static extent that the lanes divide.
        With several ``accumulators`` (fewer when they do not divide the extent), chunks go
        to them in turn, and a second rfactor adds them lane by lane before the final
        reduction.  Returns the partial-result block, or None (block untouched)."""
        sch = self.sch
        loops = sch.get_loops(block)
        n_reduce = sum(iv.iter_type == tirx.IterVar.CommReduce for iv in sch.get(block).iter_vars)
        if n_reduce != 1 or not loops or self.store(block) is None:
            return None
        extent = sch.get(loops[-1]).extent  # TE puts the reduce loop innermost
        lanes = lanes or self.lanes(block)
        if not isinstance(extent, tirx.IntImm) or extent.value % lanes or extent.value <= lanes:
            return None
        while accumulators > 1 and (extent.value % (lanes * accumulators)
                                    or extent.value <= lanes * accumulators):
            accumulators //= 2
        try:
            _, ki = sch.split(loops[-1], [None, lanes * accumulators])
            rf = sch.rfactor(ki, factor_axis=0)
        except ScheduleError:
            return None
        self.partials.append((self.store(rf).buffer, (accumulators, lanes)))
        if accumulators > 1:
            # the final reduction now adds accumulators x lanes partials: fold the
            # accumulators lane by lane first (a few vector adds), then add the lanes
            try:
                _, kl = sch.split(sch.get_loops(block)[-1], [accumulators, lanes])
                self.folds.append(self.store(sch.rfactor(kl, factor_axis=0)).buffer)
            except ScheduleError:
                pass  # the lanes x accumulators partials are added one by one
        return rf
