# %% [markdown]
# # The B1 quarter car from Python
#
# A notebook-style example of the `cosim` Python package (docs/python.md):
# open it in Jupyter or VS Code (the `# %%` cells), or run it as a script
# from anywhere:
#
#     python examples/python/quarter_car.py
#
# It needs the package (`pip install target/wheels/cosim-py/cosim-*.whl`,
# which `cargo xtask test-python` builds) and the project's FMUs (`cargo
# xtask fmus`); matplotlib is optional (the plot is saved to
# `out/examples/quarter_car.png`, or under `$COSIM_EXAMPLE_OUT`). CI runs it
# (tests/python/cosim_py/test_cosim_py.py).

# %%
import os
from pathlib import Path

import numpy as np

import cosim

try:
    ROOT = Path(__file__).resolve().parents[2]
except NameError:  # in a notebook: started from the workspace root
    ROOT = Path.cwd()
B1 = ROOT / "scenarios" / "b1_quarter_car_a.toml"
OUT = Path(os.environ.get("COSIM_EXAMPLE_OUT", ROOT / "out" / "examples"))

# %% [markdown]
# ## One run
# `cosim.run` runs the scenario in this process, as `cosim run` would; the
# trace is a NumPy structured array, one field per column.

# %%
r = cosim.run(B1)
print("status:", r.summary["status"])
print("columns:", ", ".join(r.trace.dtype.names))
t, v = r.trace["time"], r.trace["chassis.v_c"]
print(f"chassis speed: max |v_c| = {np.abs(v).max():.4f} {r.units['chassis.v_c']} at t = {t[np.abs(v).argmax()]:.3f} s")

# %% [markdown]
# ## The residual energy against the step (sadjina2016, Table III)
# The coupling creates energy; a larger macro step creates more.

# %%
for step in (1e-3, 2e-3, 5e-3):
    bond = cosim.run(B1, step=step).summary["bonds"][0]
    print(f"residual energy at {step * 1e3:g} ms: {bond['cumulative_residual_energy']:.3f} J")

# %% [markdown]
# ## Step by step
# `cosim.Simulation` advances one macro step at a time; read any output in
# between. Here: when the chassis first rises by 10 cm, with the default
# chassis and with a heavier one (`set` before the first step, as `--set`).

# %%
for label, values in (("default", {}), ("heavier", {"chassis.m_c": 1000.0})):
    with cosim.Simulation(B1, set=values) as sim:
        while not sim.done and sim.get("chassis.z_c") < 0.1:
            sim.step()
        print(f"{label} chassis: z_c >= 10 cm at t = {sim.time:.3f} s ({sim.macro_steps} steps)")

# %% [markdown]
# ## pandas and a plot (both optional)

# %%
try:
    df = r.to_pandas()
    print(df[["time", "chassis.z_c", "wheel.z_w"]].describe().loc[["min", "max"]])
except ImportError:
    print("(pandas not installed: no DataFrame)")

try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
    print("(matplotlib not installed: no plot)")
if plt is not None:
    fig, ax = plt.subplots(figsize=(8, 3))
    for name in ("chassis.z_c", "wheel.z_w"):
        ax.plot(r.trace["time"], r.trace[name], label=name)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("position [m]")
    ax.legend()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / "quarter_car.png", dpi=100, bbox_inches="tight")
    print("plot:", OUT / "quarter_car.png")
