"""The programs of docs/tf1_programs.md and the edits made to them, and the builder of
$TF1_PROGRAMS_WORK/run/{tfx,tf}/<key>/ from the authors' files: only the import lines, the data
loading (the MNIST download -> shim/input_data.py) and step counts change; the table records
every edit. The repositories are read from git snapshots under $TF1_MIRROR (<owner>+<name>/repo).

    python scripts/tf1_programs/prep.py [KEY ...]
"""
# ruff: noqa: E501 - the table keeps one program per line

import json
import os
import shutil
import subprocess
import sys

WORK = os.environ.get("TF1_PROGRAMS_WORK", "/tmp/tf1progs")
M = os.environ.get("TF1_MIRROR", "/work/.mirror")
AY, NL, GO = (M + "/aymericdamien+TensorFlow-Examples/repo", M + "/nlintz+TensorFlow-Tutorials/repo",
              M + "/golbin+TensorFlow-Tutorials/repo")
AYP = "tensorflow_v1/examples/"
HV = M + "/Hvass-Labs+TensorFlow-Tutorials/repo"
RL = M + "/MorvanZhou+Reinforcement-learning-with-tensorflow/repo"
# MorvanZhou's RL programs run on gym 0.24.1 (the last whose environments keep the old
# reset/step API; 0.25's unwrapped ones return five values), which
# names the pendulum v1; windows are not drawn (the tkinter mazes run under xvfb-run).
PEND = [("'Pendulum-v0'", "'Pendulum-v1'")]
NORENDER = [("env.render()", "pass  # env.render()")]
MV, MVT = M + "/MorvanZhou+Tensorflow-Tutorial/repo", M + "/MorvanZhou+tutorials/repo"
MVP, MVTP = "tutorial-contents/", "tensorflowTUT/"
AG = M + "/ageron+handson-ml/repo"
AG0 = [("    %tensorflow_version 1.x", "    pass  # %tensorflow_version 1.x (a Colab magic)")]
AGM = AG0 + [("(X_train, y_train), (X_test, y_test) = tf.keras.datasets.mnist.load_data()", "import keras_mnist; (X_train, y_train), (X_test, y_test) = keras_mnist.load_data()  # local digits shim"),
       ("X_train[:5000], X_train[5000:]", "X_train[:300], X_train[300:]"), ("y_train[:5000], y_train[5000:]", "y_train[:300], y_train[300:]")]
AGH = AG0 + [("from sklearn.datasets import fetch_california_housing", "from california_housing import fetch_california_housing  # the repository's CSV")]
AGD = [("datasets/housing/housing.csv", "datasets/housing/housing.csv")]
G = {  # generic edits: import lines only
    "tfx": [("import tensorflow.compat.v1 as tf", "import tensorflux.compat.v1 as tf"),
            ("import tensorflow as tf", "import tensorflux as tf"),
            ("from tensorflow.contrib import rnn", "from tensorflux.contrib import rnn"),
            ("from tensorflow.contrib.distributions import", "from tensorflux.contrib.distributions import"),
            ("from tensorflow import keras", "from tensorflux import keras")],
    "tf": [("import tensorflow.compat.v1 as tf", "import tensorflow.compat.v1 as tf; import tf1_oracle_contrib"),
           ("import tensorflow as tf", "import tensorflow.compat.v1 as tf; tf.disable_v2_behavior(); import tf1_oracle_contrib"),
           ("from tensorflow.contrib import rnn", "import tf_contrib_rnn as rnn"),
           ("from tensorflow.contrib.distributions import", "from tensorflow.compat.v1.distributions import")],
}
MNIST = ("from tensorflow.examples.tutorials.mnist import input_data", "import input_data  # local digits shim")

# key: (repo, path, [(old, new), ...] step edits, extra files [(repo path, dest)], argv)
P = {
 "ay_helloworld": (AY, AYP + "1_Introduction/helloworld.py", [], [], []),
 "ay_basic_operations": (AY, AYP + "1_Introduction/basic_operations.py", [], [], []),
 "ay_linear_regression": (AY, AYP + "2_BasicModels/linear_regression.py", [("training_epochs = 1000", "training_epochs = 100"), ("display_step = 50", "display_step = 20")], [], []),
 "ay_logistic_regression": (AY, AYP + "2_BasicModels/logistic_regression.py", [("training_epochs = 25", "training_epochs = 5")], [], []),
 "ay_nearest_neighbor": (AY, AYP + "2_BasicModels/nearest_neighbor.py", [], [], []),
 "ay_word2vec": (AY, AYP + "2_BasicModels/word2vec.py", [("num_steps = 3000000", "num_steps = 300"), ("display_step = 10000", "display_step = 100"), ("eval_step = 200000", "eval_step = 300")], [], []),
 "ay_kmeans": (AY, AYP + "2_BasicModels/kmeans.py", [("num_steps = 50 ", "num_steps = 5 ")], [], []),
 "ay_random_forest": (AY, AYP + "2_BasicModels/random_forest.py", [("num_steps = 500 ", "num_steps = 5 ")], [], []),
 "ay_gbdt": (AY, AYP + "2_BasicModels/gradient_boosted_decision_tree.py", [("max_steps = 10000", "max_steps = 5")], [], []),
 "ay_autoencoder": (AY, AYP + "3_NeuralNetworks/autoencoder.py", [("num_steps = 30000", "num_steps = 300"), ("display_step = 1000", "display_step = 100")], [], []),
 "ay_bidirectional_rnn": (AY, AYP + "3_NeuralNetworks/bidirectional_rnn.py", [("training_steps = 10000", "training_steps = 100"), ("display_step = 200", "display_step = 25")], [], []),
 "ay_convolutional_network": (AY, AYP + "3_NeuralNetworks/convolutional_network.py", [("num_steps = 2000", "num_steps = 20")], [], []),
 "ay_convolutional_network_raw": (AY, AYP + "3_NeuralNetworks/convolutional_network_raw.py", [("num_steps = 200", "num_steps = 30")], [], []),
 "ay_dcgan": (AY, AYP + "3_NeuralNetworks/dcgan.py", [("num_steps = 20000", "num_steps = 40"), ("if i % 100 == 0 or i == 1:", "if i % 10 == 0 or i == 1:")], [], []),
 "ay_dynamic_rnn": (AY, AYP + "3_NeuralNetworks/dynamic_rnn.py", [("training_steps = 10000", "training_steps = 300"), ("display_step = 200", "display_step = 50")], [], []),
 "ay_gan": (AY, AYP + "3_NeuralNetworks/gan.py", [("num_steps = 100000", "num_steps = 300"), ("if i % 1000 == 0 or i == 1:", "if i % 100 == 0 or i == 1:")], [], []),
 "ay_multilayer_perceptron": (AY, AYP + "3_NeuralNetworks/multilayer_perceptron.py", [("training_epochs = 15", "training_epochs = 5")], [], []),
 "ay_neural_network": (AY, AYP + "3_NeuralNetworks/neural_network.py", [("num_steps = 1000", "num_steps = 50")], [], []),
 "ay_neural_network_raw": (AY, AYP + "3_NeuralNetworks/neural_network_raw.py", [("num_steps = 500", "num_steps = 200")], [], []),
 "ay_recurrent_network": (AY, AYP + "3_NeuralNetworks/recurrent_network.py", [("training_steps = 10000", "training_steps = 100"), ("display_step = 200", "display_step = 25")], [], []),
 "ay_variational_autoencoder": (AY, AYP + "3_NeuralNetworks/variational_autoencoder.py", [("num_steps = 30000", "num_steps = 300"), ("if i % 1000 == 0 or i == 1:", "if i % 100 == 0 or i == 1:")], [], []),
 "ay_save_restore_model": (AY, AYP + "4_Utils/save_restore_model.py", [], [], []),
 "ay_tensorboard_basic": (AY, AYP + "4_Utils/tensorboard_basic.py", [("training_epochs = 25", "training_epochs = 3")], [], []),
 "ay_tensorboard_advanced": (AY, AYP + "4_Utils/tensorboard_advanced.py", [("training_epochs = 25", "training_epochs = 3")], [], []),
 "ay_build_an_image_dataset": (AY, AYP + "5_DataManagement/build_an_image_dataset.py", [("num_steps = 10000", "num_steps = 20"), ("DATASET_PATH = '/path/to/dataset/'", "DATASET_PATH = '" + WORK + "/imgdata/'")], [], []),
 "ay_tensorflow_dataset_api": (AY, AYP + "5_DataManagement/tensorflow_dataset_api.py", [("num_steps = 2000", "num_steps = 60"), ("display_step = 100", "display_step = 20")], [], []),
 "ay_multigpu_cnn": (AY, AYP + "6_MultiGPU/multigpu_cnn.py", [("num_steps = 200", "num_steps = 2"), ("batch_size = 1024", "batch_size = 64"), ("display_step = 10", "display_step = 1")], [], []),
 "nl_00_multiply": (NL, "00_multiply.py", [], [], []),
 "nl_01_linear_regression": (NL, "01_linear_regression.py", [], [], []),
 "nl_02_logistic_regression": (NL, "02_logistic_regression.py", [("for i in range(100):", "for i in range(5):")], [], []),
 "nl_03_net": (NL, "03_net.py", [("for i in range(100):", "for i in range(5):")], [], []),
 "nl_04_modern_net": (NL, "04_modern_net.py", [("for i in range(100):", "for i in range(5):")], [], []),
 "nl_05_convolutional_net": (NL, "05_convolutional_net.py", [("for i in range(100):", "for i in range(2):")], [], []),
 "nl_06_autoencoder": (NL, "06_autoencoder.py", [("for i in range(100):", "for i in range(5):")], [], []),
 "nl_07_lstm": (NL, "07_lstm.py", [("for i in range(100):", "for i in range(2):")], [], []),
 "nl_08_word2vec": (NL, "08_word2vec.py", [], [], []),
 "nl_09_tensorboard": (NL, "09_tensorboard.py", [("for i in range(100):", "for i in range(3):")], [], []),
 "nl_10_save_restore_net": (NL, "10_save_restore_net.py", [("for i in range(start, 100):", "for i in range(start, 3):")], [], []),
 "nl_11_gan": (NL, "11_gan.py", [("for i in range(200):", "for i in range(30):")], [], []),
 "go_basic": (GO, "03 - TensorFlow Basic/01 - Basic.py", [], [], []),
 "go_variable": (GO, "03 - TensorFlow Basic/02 - Variable.py", [], [], []),
 "go_linear_regression": (GO, "03 - TensorFlow Basic/03 - Linear Regression.py", [], [], []),
 "go_classification": (GO, "04 - Neural Network Basic/01 - Classification.py", [], [], []),
 "go_deep_nn": (GO, "04 - Neural Network Basic/02 - Deep NN.py", [], [], []),
 "go_word2vec": (GO, "04 - Neural Network Basic/03 - Word2Vec.py", [], [], []),
 "go_saver": (GO, "05 - TensorBoard, Saver/01 - Saver.py", [], [("05 - TensorBoard, Saver/data.csv", "data.csv")], [[], []]),
 "go_tensorboard": (GO, "05 - TensorBoard, Saver/02 - TensorBoard.py", [], [("05 - TensorBoard, Saver/data.csv", "data.csv"), ("05 - TensorBoard, Saver/model", "model")], []),
 "go_tensorboard2": (GO, "05 - TensorBoard, Saver/03 - TensorBoard2.py", [], [("05 - TensorBoard, Saver/data.csv", "data.csv")], []),
 "go_mnist": (GO, "06 - MNIST/01 - MNIST.py", [("for epoch in range(15):", "for epoch in range(3):")], [], []),
 "go_dropout": (GO, "06 - MNIST/02 - Dropout.py", [("for epoch in range(30):", "for epoch in range(3):")], [], []),
 "go_cnn": (GO, "07 - CNN/01 - CNN.py", [("for epoch in range(15):", "for epoch in range(2):")], [], []),
 "go_cnn_layers": (GO, "07 - CNN/02 - tf.layers.py", [("for epoch in range(15):", "for epoch in range(2):")], [], []),
 "go_autoencoder": (GO, "08 - Autoencoder/01 - Autoencoder.py", [("training_epoch = 20", "training_epoch = 3")], [], []),
 "go_gan": (GO, "09 - GAN/01 - GAN.py", [("total_epoch = 100", "total_epoch = 3")], [], []),
 "go_gan2": (GO, "09 - GAN/02 - GAN2.py", [("total_epoch = 100", "total_epoch = 3")], [], []),
 "go_rnn_mnist": (GO, "10 - RNN/01 - MNIST.py", [("total_epoch = 30", "total_epoch = 3")], [], []),
 "go_autocomplete": (GO, "10 - RNN/02 - Autocomplete.py", [], [], []),
 "go_seq2seq": (GO, "10 - RNN/03 - Seq2Seq.py", [], [], []),
 "go_chatbot": (GO, "10 - RNN/ChatBot/train.py", [], [("10 - RNN/ChatBot/" + f, f) for f in ("config.py", "model.py", "dialog.py", "data")], [["--train", "--epoch=2", "--train_dir=./newmodel"], ["--test", "--train_dir=./newmodel"]]),
 "go_dqn_train": (GO, "12 - DQN/agent.py", [("MAX_EPISODE = 10000", "MAX_EPISODE = 3")], [("12 - DQN/" + f, f) for f in ("game.py", "model.py")], [["--train"]]),
 "hv_01_simple_linear_model": (HV, "01_Simple_Linear_Model.ipynb", [("optimize(num_iterations=990)", "optimize(num_iterations=90)")], [], []),
 "hv_02_convolutional_neural_network": (HV, "02_Convolutional_Neural_Network.ipynb", [("optimize(num_iterations=900)", "optimize(num_iterations=40)"), ("optimize(num_iterations=9000)", "optimize(num_iterations=10)")], [], []),
 "hv_03b_layers_api": (HV, "03B_Layers_API.ipynb", [("optimize(num_iterations=900)", "optimize(num_iterations=40)"), ("optimize(num_iterations=9000)", "optimize(num_iterations=10)")], [], []),
 "hv_13b_visual_analysis_mnist": (HV, "13B_Visual_Analysis_MNIST.ipynb", [("optimize(num_iterations=10000)", "optimize(num_iterations=100)")], [], []),

 # MorvanZhou/Reinforcement-learning-with-tensorflow (docs/tf1_programs.md, twenty-fourth session)
 "rl_dqn_maze": (RL, "contents/5_Deep_Q_Network/run_this.py", [("for episode in range(300):", "for episode in range(40):")], [("contents/5_Deep_Q_Network/" + f, f) for f in ("RL_brain.py", "maze_env.py")], []),
 "rl_double_dqn": (RL, "contents/5.1_Double_DQN/run_Pendulum.py", PEND + [("MEMORY_SIZE = 3000", "MEMORY_SIZE = 500"), ("total_steps - MEMORY_SIZE > 20000", "total_steps - MEMORY_SIZE > 1500")], [("contents/5.1_Double_DQN/RL_brain.py", "RL_brain.py")], []),
 "rl_prioritized_dqn": (RL, "contents/5.2_Prioritized_Replay_DQN/run_MountainCar.py", [("MEMORY_SIZE = 10000", "MEMORY_SIZE = 1000"), ("for i_episode in range(20):", "for i_episode in range(2):")], [("contents/5.2_Prioritized_Replay_DQN/RL_brain.py", "RL_brain.py")], []),
 "rl_dueling_dqn": (RL, "contents/5.3_Dueling_DQN/run_Pendulum.py", PEND + [("MEMORY_SIZE = 3000", "MEMORY_SIZE = 500"), ("total_steps-MEMORY_SIZE > 15000", "total_steps-MEMORY_SIZE > 1500")], [("contents/5.3_Dueling_DQN/RL_brain.py", "RL_brain.py")], []),
 "rl_gym_cartpole": (RL, "contents/6_OpenAI_gym/run_CartPole.py", NORENDER + [("for i_episode in range(100):", "for i_episode in range(30):")], [("contents/6_OpenAI_gym/RL_brain.py", "RL_brain.py")], []),
 "rl_gym_mountaincar": (RL, "contents/6_OpenAI_gym/run_MountainCar.py", NORENDER + [("for i_episode in range(10):", "for i_episode in range(1):")], [("contents/6_OpenAI_gym/RL_brain.py", "RL_brain.py")], []),
 "rl_pg_cartpole": (RL, "contents/7_Policy_gradient_softmax/run_CartPole.py", [("for i_episode in range(3000):", "for i_episode in range(40):")], [("contents/7_Policy_gradient_softmax/RL_brain.py", "RL_brain.py")], []),
 "rl_pg_mountaincar": (RL, "contents/7_Policy_gradient_softmax/run_MountainCar.py", [("for i_episode in range(1000):", "for i_episode in range(2):")], [("contents/7_Policy_gradient_softmax/RL_brain.py", "RL_brain.py")], []),
 "rl_ac_cartpole": (RL, "contents/8_Actor_Critic_Advantage/AC_CartPole.py", [("MAX_EPISODE = 3000", "MAX_EPISODE = 60")], [], []),
 "rl_ac_pendulum": (RL, "contents/8_Actor_Critic_Advantage/AC_continue_Pendulum.py", PEND + NORENDER + [("MAX_EPISODE = 1000", "MAX_EPISODE = 15")], [], []),
 "rl_ddpg": (RL, "contents/9_Deep_Deterministic_Policy_Gradient_DDPG/DDPG.py", PEND + [("MAX_EPISODES = 200", "MAX_EPISODES = 12"), ("MEMORY_CAPACITY = 10000", "MEMORY_CAPACITY = 1000")], [], []),
 "rl_ddpg_update": (RL, "contents/9_Deep_Deterministic_Policy_Gradient_DDPG/DDPG_update.py", PEND + [("MAX_EPISODES = 200", "MAX_EPISODES = 12"), ("MEMORY_CAPACITY = 10000", "MEMORY_CAPACITY = 1000")], [], []),
 "rl_ddpg_update2": (RL, "contents/9_Deep_Deterministic_Policy_Gradient_DDPG/DDPG_update2.py", PEND + [("MAX_EPISODES = 200", "MAX_EPISODES = 12"), ("MEMORY_CAPACITY = 10000", "MEMORY_CAPACITY = 1000")], [], []),
 "rl_a3c_discrete": (RL, "contents/10_A3C/A3C_discrete_action.py", [("MAX_GLOBAL_EP = 1000", "MAX_GLOBAL_EP = 100")], [], []),
 "rl_a3c_continuous": (RL, "contents/10_A3C/A3C_continuous_action.py", PEND + [("MAX_GLOBAL_EP = 2000", "MAX_GLOBAL_EP = 20")], [], []),
 "rl_a3c_rnn": (RL, "contents/10_A3C/A3C_RNN.py", PEND + [("MAX_GLOBAL_EP = 1500", "MAX_GLOBAL_EP = 10")], [], []),
 "rl_ppo": (RL, "contents/12_Proximal_Policy_Optimization/simply_PPO.py", PEND + NORENDER + [("EP_MAX = 1000", "EP_MAX = 20")], [], []),
 "rl_dppo": (RL, "contents/12_Proximal_Policy_Optimization/DPPO.py", PEND + NORENDER + [("EP_MAX = 1000", "EP_MAX = 20"), ("    while True:\n        s = env.reset()", "    for _ in range(1):\n        s = env.reset()")], [], []),
 "rl_discrete_dppo": (RL, "contents/12_Proximal_Policy_Optimization/discrete_DPPO.py", NORENDER + [("EP_MAX = 1000", "EP_MAX = 40"), ("    while True:\n        s = env.reset()", "    for _ in range(1):\n        s = env.reset()")], [], []),
 "rl_car_ddpg": (RL, "experiments/2D_car/DDPG.py", [("MAX_EPISODES = 500", "MAX_EPISODES = 8"), ("MAX_EP_STEPS = 600", "MAX_EP_STEPS = 200"), ("RENDER = True", "RENDER = False"), ("MEMORY_CAPACITY = 2000", "MEMORY_CAPACITY = 500")], [("experiments/2D_car/" + f, f) for f in ("car_env.py", "collision.py")], []),
 "rl_arm_ddpg": (RL, "experiments/Robot_arm/DDPG.py", [("MAX_EPISODES = 600", "MAX_EPISODES = 8"), ("RENDER = True", "RENDER = False"), ("MEMORY_CAPACITY = 5000", "MEMORY_CAPACITY = 500")], [("experiments/Robot_arm/arm_env.py", "arm_env.py")], []),
 "rl_arm_a3c": (RL, "experiments/Robot_arm/A3C.py", [("MAX_GLOBAL_EP = 2000", "MAX_GLOBAL_EP = 10")], [("experiments/Robot_arm/arm_env.py", "arm_env.py")], []),
 "rl_arm_dppo": (RL, "experiments/Robot_arm/DPPO.py", NORENDER + [("EP_MAX = 2000", "EP_MAX = 12"), ("    while True:\n        s = env.reset()", "    for _ in range(1):\n        s = env.reset()")], [("experiments/Robot_arm/arm_env.py", "arm_env.py")], []),
 "mv_201_session": (MV, MVP + "201_session.py", [], [], []),
 "mv_202_placeholder": (MV, MVP + "202_placeholder.py", [], [], []),
 "mv_203_variable": (MV, MVP + "203_variable.py", [], [], []),
 "mv_204_activation": (MV, MVP + "204_activation.py", [], [], []),
 "mv_301_simple_regression": (MV, MVP + "301_simple_regression.py", [], [], []),
 "mv_302_simple_classification": (MV, MVP + "302_simple_classification.py", [], [], []),
 "mv_303_save_reload": (MV, MVP + "303_save_reload.py", [], [], []),
 "mv_304_optimizer": (MV, MVP + "304_optimizer.py", [], [], []),
 "mv_305_tensorboard": (MV, MVP + "305_tensorboard.py", [], [], []),
 "mv_306_dataset": (MV, MVP + "306_dataset.py", [], [], []),
 "mv_401_cnn": (MV, MVP + "401_CNN.py", [("for step in range(600):", "for step in range(101):")], [], []),
 "mv_402_rnn_classification": (MV, MVP + "402_RNN_classification.py", [("for step in range(1200):", "for step in range(101):")], [], []),
 "mv_403_rnn_regression": (MV, MVP + "403_RNN_regression.py", [], [], []),
 "mv_404_autoencoder": (MV, MVP + "404_AutoEncoder.py", [("for step in range(8000):", "for step in range(301):")], [], []),
 "mv_405_dqn": (MV, MVP + "405_DQN_reinforcement_learning.py", [("for i_episode in range(400):", "for i_episode in range(50):")], [], []),
 "mv_406_gan": (MV, MVP + "406_GAN.py", [("for step in range(5000):", "for step in range(301):")], [], []),
 "mv_406_conditional_gan": (MV, MVP + "406_conditional_GAN.py", [("for step in range(7000):", "for step in range(301):")], [], []),
 "mv_501_dropout": (MV, MVP + "501_dropout.py", [("for t in range(500):", "for t in range(201):")], [], []),
 "mv_502_batch_normalization": (MV, MVP + "502_batch_normalization.py", [("EPOCH = 12", "EPOCH = 3")], [], []),
 "mv_503_visualize_gradient_descent": (MV, MVP + "503_visualize_gradient_descent.py", [], [], []),
 "mv_504_distributed_training": (MV, MVP + "504_distributed_training.py", [("last_step=100000", "last_step=300"), ("if step.value % 500 == 0:", "if step.value % 50 == 0:")], [], []),
 "mvt_tensorflow6_session": (MVT, MVTP + "tensorflow6_session.py", [], [], []),
 "mvt_tensorflow7_variable": (MVT, MVTP + "tensorflow7_variable.py", [], [], []),
 "mvt_tensorflow8_feeds": (MVT, MVTP + "tensorflow8_feeds.py", [], [], []),
 "mvt_tensorflow10_def_add_layer": (MVT, MVTP + "tensorflow10_def_add_layer.py", [], [], []),
 "mvt_tensorflow11_build_network": (MVT, MVTP + "tensorflow11_build_network.py", [], [], []),
 "mvt_tensorflow12_plut_result": (MVT, MVTP + "tensorflow12_plut_result.py", [], [], []),
 "mvt_tf5_example2": (MVT, MVTP + "tf5_example2/full_code.py", [], [], []),
 "mvt_tf11_build_network": (MVT, MVTP + "tf11_build_network/full_code.py", [], [], []),
 "mvt_tf12_plot_result": (MVT, MVTP + "tf12_plot_result/full_code.py", [], [], []),
 "mvt_tf14_tensorboard": (MVT, MVTP + "tf14_tensorboard/full_code.py", [], [], []),
 "mvt_tf15_tensorboard": (MVT, MVTP + "tf15_tensorboard/full_code.py", [], [], []),
 "mvt_tf16_classification": (MVT, MVTP + "tf16_classification/full_code.py", [], [], []),
 "mvt_tf17_dropout": (MVT, MVTP + "tf17_dropout/full_code.py", [], [], []),
 "mvt_tf18_cnn2": (MVT, MVTP + "tf18_CNN2/full_code.py", [], [], []),
 "mvt_tf18_cnn3": (MVT, MVTP + "tf18_CNN3/full_code.py", [("for i in range(1000):", "for i in range(101):")], [], []),
 "mvt_tf19_saver": (MVT, MVTP + "tf19_saver.py", [], [], []),
 "mvt_tf20_rnn2": (MVT, MVTP + "tf20_RNN2/full_code.py", [("training_iters = 100000", "training_iters = 12800")], [], []),
 "mvt_tf20_rnn2_2": (MVT, MVTP + "tf20_RNN2.2/full_code.py", [], [], []),
 "mvt_tf21_autoencoder": (MVT, MVTP + "tf21_autoencoder/full_code.py", [], [], []),
 "mvt_tf22_scope": (MVT, MVTP + "tf22_scope/tf22_scope.py", [], [], []),
 "mvt_tf22_rnn_scope": (MVT, MVTP + "tf22_scope/tf22_RNN_scope.py", [], [], []),
 "mvt_tf23_bn": (MVT, MVTP + "tf23_BN/tf23_BN.py", [], [], []),

 # ageron/handson-ml, first edition (docs/tf1_programs.md, twenty-fourth session): MNIST from
 # shim/keras_mnist.py (1,500 + 297 digits: validation cut from 5,000 to 300), the California
 # housing data from the repository's CSV (shim/california_housing.py), epochs cut
 "ag_09_up_and_running": (AG, "09_up_and_running_with_tensorflow.ipynb", AGH + [("n_epochs = 10001", "n_epochs = 501"), ("n_epochs = 1000", "n_epochs = 300")], AGD, []),
 "ag_10_intro_ann": (AG, "10_introduction_to_artificial_neural_networks.ipynb", AGM + [("tol=-np.infty", "tol=None"), ("n_epochs = 40", "n_epochs = 3"), ("n_epochs = 20", "n_epochs = 3"), ("n_epochs = 10001", "n_epochs = 6"), ("num_epochs=40", "num_epochs=3"), ("feature_cols = [tf.feature_column", '_EST = """\nfeature_cols = [tf.feature_column'), ("y_pred[0]\n", 'y_pred[0]\n"""\nif hasattr(tf, "estimator"): exec(_EST)  # TF 2.21 has no tf.estimator\n')], [], []),
 "ag_11_deep_learning": (AG, "11_deep_learning.ipynb", AGM + [("n_epochs = 40", "n_epochs = 2"), ("n_epochs = 20", "n_epochs = 2"), ("n_epochs = 1000", "n_epochs = 3"), ("n_epochs = 100", "n_epochs = 2"), ("n_epochs = 150", "n_epochs = 2"), ("n_epochs = 5", "n_epochs = 2"), ("n_epochs=1000", "n_epochs=3"), ("n_iter=50", "n_iter=2"), ('"batch_size": [10, 50, 100, 500]', '"batch_size": [10, 50, 100]')], [], []),
 "ag_14_rnn": (AG, "14_recurrent_neural_networks.ipynb", AGM + [("n_epochs = 100", "n_epochs = 3"), ("n_epochs = 10", "n_epochs = 2"), ("n_epochs = 50", "n_epochs = 2"), ("n_iterations = 1500", "n_iterations = 150"), ("words = fetch_words_data()", "words = ['w%d' % i for i in np.random.RandomState(42).zipf(1.2, 200000) % 20000]  # local stand-in for text8"), ("n_iter=5000", "max_iter=250"), ("vocabulary_size = 50000", "vocabulary_size = 6000")], [], []),
 "ag_15_autoencoders": (AG, "15_autoencoders.ipynb", AG0 + [("n_epochs = 100", "n_epochs = 2"), ("n_epochs = 50", "n_epochs = 2"), ("n_epochs = 10", "n_epochs = 2"), ("n_epochs = 5", "n_epochs = 2"), ("n_epochs = 4", "n_epochs = 2"), ("n_epochs = [4, 4]", "n_epochs = [2, 2]"), ("n_epochs=4", "n_epochs=2"), ("n_labeled_instances = 20000", "n_labeled_instances = 1000")], [], []),
 "ag_12_distributed": (AG, "12_distributed_tensorflow.ipynb", AG0, [], []),
 "ag_extra_reproducibility": (AG, "extra_tensorflow_reproducibility.ipynb", AGM[:2] + [("from IPython.display import IFrame", "IFrame = dict  # IPython.display (a video in the notebook)"), ("from __future__ import division, print_function, unicode_literals", "pass  # the __future__ import (Python 2), below the Colab cell here"), ("num_epochs=10,", "num_epochs=2,"), ("epochs=10)", "epochs=2)")], [], []),
}


def transform(text, variant, edits):
    for old, new in [MNIST] + G[variant] + edits:
        text = text.replace(old, new)
    return text


def build(key, variant):
    repo, path, edits, extra, argv = P[key]
    d = os.path.join(WORK, "run", variant, key)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    src = subprocess.run(["git", "-C", repo, "show", "HEAD:" + path], capture_output=True, text=True, check=True).stdout
    if path.endswith(".ipynb"):  # the notebook's code cells, in order, without IPython magics
        cells = ["".join(c["source"]) for c in json.loads(src)["cells"] if c["cell_type"] == "code"]
        src = "\n".join(l for l in "\n\n".join(cells).split("\n") if not l.startswith(("%", "!"))) + "\n"
    for old, _ in edits:
        assert old in src, (key, old)
    open(os.path.join(d, "main.py"), "w").write(transform(src, variant, edits))
    for rp, dest in extra:
        files = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD", rp], capture_output=True, text=True, check=True).stdout.split("\n")
        for f in filter(None, files):
            out = os.path.join(d, dest, os.path.relpath(f, rp)) if f != rp else os.path.join(d, dest)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            data = subprocess.run(["git", "-C", repo, "show", "HEAD:" + f], capture_output=True, check=True).stdout
            if f.endswith(".py"):
                data = transform(data.decode(), variant, edits).encode()
            open(out, "wb").write(data)
    return d, argv


if __name__ == "__main__":
    if not sys.argv[1:]:
        shutil.rmtree(os.path.join(WORK, "run"), ignore_errors=True)
    for k in (sys.argv[1:] or P):
        for v in ("tfx", "tf"):
            build(k, v)
    print(len(P), "programs")
