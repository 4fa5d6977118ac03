"""Runs the programs built by prep.py, each in its own directory, one after the other:

    python scripts/tf1_programs/run.py tfx|tf [KEY ...]

"tfx" runs them with tensorflux (this checkout, with $TFX_PYTHON, default this interpreter),
"tf" with TensorFlow ($TF_PYTHON, default the oracle venv). Logs go to
$TF1_PROGRAMS_WORK/logs/<variant>/<key>.log; one summary line per program is printed.
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from prep import WORK, P  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
SHIM, STUBS = os.path.join(HERE, "shim"), os.path.join(HERE, "oracle_stubs")
# Plotting that blocks (plt.waitforbuttonpress) or asks for a macOS font: a no-op matplotlib.
# MorvanZhou's programs draw as they train (the venv has no matplotlib): all of them too.
STUB_MPL = {"go_word2vec", "ay_dcgan", "ay_gan"} | {k for k in P if k.startswith(("mv", "ag"))}
# ageron's notebooks need scikit-learn itself (iris, StandardScaler, RandomizedSearchCV, t-SNE)
# under both interpreters: $AG_SKLEARN_SITE holds links to tensorflux's venv's sklearn, scipy,
# joblib, threadpoolctl, cloudpickle and narwhals, ahead of oracle_stubs' sklearn.
AG_SITE = os.environ.get("AG_SKLEARN_SITE", os.path.join(WORK, "sksite"))
# Modules a program must not find (TF1_HIDE_MODULES, read by runner.py): 401_CNN runs a t-SNE
# when scikit-learn imports, with `n_iter`, which scikit-learn 1.7 removed (the oracle has none).
HIDE = {"mv_401_cnn": "sklearn"}
# 504's parameter server joins forever once its workers finish (the same under TF).
# ageron's chapter 12 never stops the coordinator of its QueueRunner (create_threads with
# daemon=False, as TF's default): its close thread keeps the process alive, as under TF.
TIMEOUT = {"mv_504_distributed_training": 90, "mv_405_dqn": 300, "ag_12_distributed": 90}
# 405 needs gym <= 0.24 (reset() -> obs, step() -> 4 values) and pygame for env.render(), from
# `pip install --target $TF1_PROGRAMS_WORK/gym gym==0.24.1 pygame==2.6.1` (its numpy removed);
# SDL draws nowhere.
GYM = {"mv_405_dqn"}
# The reinforcement-learning programs (rl_*) need gym 0.24.1, pandas and pyglet, installed with
# `pip install --target` into $RL_SITE (tensorflux's interpreter) and $RL_SITE_TF (the
# oracle's); their plots print the plotted series (rl_stubs/matplotlib). Tk and pyglet
# windows need an X display: those run under xvfb-run.
RL_STUBS = os.path.join(HERE, "rl_stubs")
XVFB = {"rl_dqn_maze", "rl_car_ddpg", "rl_arm_ddpg", "rl_arm_a3c", "rl_arm_dppo"}


def main(variant, keys):
    env = dict(os.environ, MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0",
               TF1_PROGRAMS_WORK=WORK)
    if variant == "tfx":
        py = os.environ.get("TFX_PYTHON", sys.executable)
        env["PYTHONPATH"] = f"{REPO}:{SHIM}"
    else:
        py = os.environ.get("TF_PYTHON",
                            os.path.expanduser("~/.cache/tensorflux-oracle-venv/bin/python"))
        env["PYTHONPATH"] = f"{SHIM}:{STUBS}"
        env["TF_USE_LEGACY_KERAS"] = "1"  # tf.layers lives in tf_keras
    os.makedirs(os.path.join(WORK, "logs", variant), exist_ok=True)
    for k in keys:
        d = os.path.join(WORK, "run", variant, k)
        for sub in ("samples", "samples2"):  # the GAN tutorials save pictures there
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        e = dict(env)
        if k in STUB_MPL:
            e["PYTHONPATH"] += ":" + STUBS
        if k.startswith("rl_"):
            site = (os.environ.get("RL_SITE", "/tmp/rlsite") if variant == "tfx"
                    else os.environ.get("RL_SITE_TF", "/tmp/rlsite_tf"))
            e["PYTHONPATH"] = f"{RL_STUBS}:{e['PYTHONPATH']}:{site}"
        if k.startswith("ag"):
            e["PYTHONPATH"] = f"{AG_SITE}:{e['PYTHONPATH']}"
        if k in HIDE:
            e["TF1_HIDE_MODULES"] = HIDE[k]
        if k in GYM:
            e["PYTHONPATH"] += ":" + os.path.join(WORK, "gym")
            e["SDL_VIDEODRIVER"] = "dummy"
        t0, rc = time.time(), 0
        with open(os.path.join(WORK, "logs", variant, k + ".log"), "w") as log:
            for argv in P[k][4] or [[]]:
                xvfb = ["xvfb-run", "-a"] if k in XVFB else []
                # -k: SDL (pygame, 405) turns SIGTERM into a quit event the program never reads
                cmd = xvfb + ["timeout", "-k", "10", str(TIMEOUT.get(k, 400)), py,
                              os.path.join(HERE, "runner.py"), "main.py"] + argv
                r = subprocess.run(cmd, cwd=d, env=e, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, check=False)
                rc = rc or r.returncode
        print(f"{k:36s} rc={rc} {time.time() - t0:6.1f}s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or list(P))
